/*
 * user_mapper.c - user-defined mappers (`declare mapper`).
 *
 * Checks a default mapper for a struct with a heap-allocated array member
 * (map(tofrom: v, v.data[0:v.n])) used by map clauses of target, target
 * enter data and target exit data (the clause's map type decays the
 * mapper's tofrom to to/from; delete removes without copying), by an
 * implicitly mapped struct, for each element of an array section of such
 * structs, and by the motion clauses of target update; and two named
 * mappers of one type (one maps only half of the array), selected with
 * map(mapper(name), ...) on target, target data and enter/exit data.
 * Data mapped by enter data is inspected on the device through
 * omp_get_mapped_ptr + is_device_ptr, which also checks that the mapper
 * attached the device copy of the pointer member.
 *
 * Every scenario uses its own struct object: clang/libomptarget 19 never
 * unmaps the base struct of a mapper-mapped object (LLVM issue #60106), so
 * reusing an address would make later scenarios see a stale mapping.
 * A target construct whose mapper maps an object that is already present
 * is broken in clang 19 (data is transferred although present, LLVM issue
 * #61636, fixed in 2026 by PR #177059); that scenario is compiled only with
 * -DTEST_MAPPER_ON_PRESENT_DATA. Also, when a type has both a default and
 * a named mapper, clang 19 applies the default one even where
 * map(mapper(name), ...) is written; the named mappers are therefore
 * tested on a type without a default mapper, and the mixed case only with
 * -DTEST_NAMED_AND_DEFAULT_MAPPER.
 *
 * Why: mappers are expanded by the runtime calling a compiler-generated
 * mapper function that pushes extra map entries (including attaching the
 * pointer member), so a runtime must forward them correctly. The host
 * changes its copies while data is mapped, so transfers in the wrong
 * direction or a missing attach are visible.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "offload_check.h"

#define NV 3

typedef struct {
  int n;
  int tag;
  long *data;
} vec_t;

/* default mapper: the struct and its whole array */
#pragma omp declare mapper(vec_t v) map(tofrom : v, v.data[0 : v.n])

/* same layout, named mappers only */
typedef struct {
  int n;
  int tag;
  long *data;
} span_t;
#pragma omp declare mapper(first_half : span_t s)                             \
    map(tofrom : s, s.data[0 : s.n / 2])
#pragma omp declare mapper(whole : span_t s) map(tofrom : s, s.data[0 : s.n])

/* one object per scenario, see the comment at the top */
static vec_t v_target, v_implicit, v_enter, v_delete;
static vec_t vs[NV];
static span_t s_target, s_data, s_enter, s_whole;
static int dev;

static long *alloc_fill(int n, int base) {
  long *p = malloc((size_t)n * sizeof(long));
  if (!p) {
    fprintf(stderr, "FAIL %s:%d: malloc\n", __FILE__, __LINE__);
    exit(1);
  }
  for (int i = 0; i < n; i++)
    p[i] = base + i;
  return p;
}

static void span_init(span_t *s, int n, int base) {
  s->n = n;
  s->tag = base;
  s->data = alloc_fill(n, base);
}

static void vec_init(vec_t *v, int n, int base) {
  v->n = n;
  v->tag = base;
  v->data = alloc_fill(n, base);
}

static void test_default_mapper_target(void) {
  vec_t *v = &v_target;
  vec_init(v, 1000, 10);
  long *host_data = v->data;
#pragma omp target map(tofrom : v_target)
  {
#pragma omp parallel for
    for (int i = 0; i < v_target.n; i++)
      v_target.data[i] = v_target.data[i] * 2 + v_target.tag;
    v_target.tag = -1;
  }
  CHECK("default mapper: struct member copied back", v->tag, -1);
  CHECK("default mapper: pointer member keeps the host address",
        (intptr_t)v->data, (intptr_t)host_data);
  for (int i = 0; i < v->n; i++)
    CHECK_AT("default mapper: array member", i, v->data[i],
             2 * (10 + i) + 10);

  /* the struct appears in no map clause: implicit map uses the mapper */
  vec_init(&v_implicit, 500, 3);
#pragma omp target
  {
#pragma omp parallel for
    for (int i = 0; i < v_implicit.n; i++)
      v_implicit.data[i] += 100;
  }
  for (int i = 0; i < v_implicit.n; i++)
    CHECK_AT("default mapper on an implicitly mapped struct", i,
             v_implicit.data[i], 3 + i + 100);
}

static void test_default_mapper_enter_exit(void) {
  vec_t *v = &v_enter;
  vec_init(v, 800, 0);
  long *host_data = v->data;
#pragma omp target enter data map(to : v_enter)
  CHECK("enter data via mapper: array present",
        omp_target_is_present(host_data, dev) != 0, 1);
  for (int i = 0; i < v->n; i++)
    v->data[i] = -5; /* host only */
  v->tag = 77;       /* host only */

  /* look at the device copy of the struct directly */
  vec_t *dv = omp_get_mapped_ptr(v, dev);
  CHECK("omp_get_mapped_ptr of the mapped struct", dv != NULL, 1);
  if (!dv)
    return;
  int seen_tag = -1, seen_n = -1;
  long seen_sum = -1;
#pragma omp target is_device_ptr(dv) map(from : seen_tag, seen_n, seen_sum)
  {
    long s = 0;
    seen_tag = dv->tag;
    seen_n = dv->n;
    for (int i = 0; i < dv->n; i++) {
      s += dv->data[i];
      dv->data[i] = 3 * dv->data[i] + 1;
    }
    seen_sum = s;
    dv->tag = 9;
  }
  CHECK("enter data via mapper copied struct member tag", seen_tag, 0);
  CHECK("enter data via mapper copied struct member n", seen_n, 800);
  CHECK("enter data via mapper copied and attached the array", seen_sum,
        800L * 799 / 2);
  for (int i = 0; i < v->n; i++)
    CHECK_AT("still mapped: nothing copied back", i, v->data[i], -5);

  /* target update from/to with the mapper */
#pragma omp target update from(v_enter)
  CHECK("update from via mapper: struct member", v->tag, 9);
  CHECK("update from via mapper: pointer member keeps the host address",
        (intptr_t)v->data, (intptr_t)host_data);
  for (int i = 0; i < v->n; i++)
    CHECK_AT("update from via mapper: array", i, v->data[i], 3 * i + 1);
  for (int i = 0; i < v->n; i++)
    v->data[i] = 2 * i;
  v->tag = 21;
#pragma omp target update to(v_enter)
#pragma omp target is_device_ptr(dv) map(from : seen_tag, seen_sum)
  {
    long s = 0;
    for (int i = 0; i < dv->n; i++) {
      s += dv->data[i];
      dv->data[i] += 1;
    }
    seen_sum = s;
    seen_tag = dv->tag;
  }
  CHECK("update to via mapper: struct member", seen_tag, 21);
  CHECK("update to via mapper: array (pointer still attached)", seen_sum,
        800L * 799);

#pragma omp target exit data map(from : v_enter)
  CHECK("exit data via mapper: struct member", v->tag, 21);
  CHECK("exit data via mapper: pointer member keeps the host address",
        (intptr_t)v->data, (intptr_t)host_data);
  for (int i = 0; i < v->n; i++)
    CHECK_AT("exit data via mapper: array", i, v->data[i], 2 * i + 1);
  CHECK("exit data via mapper: array no longer present",
        omp_target_is_present(host_data, dev), 0);

  /* exit data with delete: nothing comes back */
  v = &v_delete;
  vec_init(v, 100, 1);
#pragma omp target enter data map(to : v_delete)
  dv = omp_get_mapped_ptr(v, dev);
  CHECK("omp_get_mapped_ptr of the mapped struct", dv != NULL, 1);
  if (!dv)
    return;
#pragma omp target is_device_ptr(dv)
  {
    for (int i = 0; i < dv->n; i++)
      dv->data[i] = 0;
    dv->tag = 0;
  }
#pragma omp target exit data map(delete : v_delete)
  CHECK("exit data delete via mapper: struct not copied back", v->tag, 1);
  for (int i = 0; i < v->n; i++)
    CHECK_AT("exit data delete via mapper: array not copied back", i,
             v->data[i], 1 + i);
  CHECK("exit data delete via mapper: array no longer present",
        omp_target_is_present(v->data, dev), 0);
}

static void test_array_of_structs(void) {
  for (int k = 0; k < NV; k++)
    vec_init(&vs[k], 64 * (k + 1), 1000 * k);
#pragma omp target map(tofrom : vs[0 : NV])
  {
    for (int k = 0; k < NV; k++) {
#pragma omp parallel for
      for (int i = 0; i < vs[k].n; i++)
        vs[k].data[i] = -vs[k].data[i] - k;
      vs[k].tag += 1;
    }
  }
  for (int k = 0; k < NV; k++) {
    CHECK_AT("mapper per element: tag", k, vs[k].tag, 1000 * k + 1);
    for (int i = 0; i < vs[k].n; i++)
      CHECK_AT("mapper per element: data", k * 1000 + i, vs[k].data[i],
               -(1000 * k + i) - k);
  }
}

static void test_named_mapper(void) {
  /* target construct: only the first half travels */
  span_t *s = &s_target;
  span_init(s, 200, 5);
#pragma omp target map(mapper(first_half), tofrom : s_target)
  {
    for (int i = 0; i < s_target.n / 2; i++)
      s_target.data[i] *= 10;
    s_target.tag = 6;
  }
  CHECK("named mapper on target: struct member", s->tag, 6);
  for (int i = 0; i < s->n; i++)
    CHECK_AT("named mapper on target: first half", i, s->data[i],
             i < 100 ? 10 * (5 + i) : 5 + i);

  /* target data: the second half is not mapped, so host writes to it
   * survive the end of the region */
  s = &s_data;
  span_init(s, 200, 0);
#pragma omp target data map(mapper(first_half), tofrom : s_data)
  {
    CHECK("named mapper on target data: first half present",
          omp_target_is_present(&s->data[99], dev) != 0, 1);
    CHECK("named mapper on target data: second half not present",
          omp_target_is_present(&s->data[100], dev), 0);
    span_t *ds = omp_get_mapped_ptr(s, dev);
    CHECK("omp_get_mapped_ptr of the mapped struct", ds != NULL, 1);
    if (ds) {
#pragma omp target is_device_ptr(ds)
      {
        for (int i = 0; i < ds->n / 2; i++)
          ds->data[i] = 3 * ds->data[i] + 1;
      }
    }
    for (int i = 0; i < s->n; i++)
      s->data[i] = -i; /* host only */
  }
  for (int i = 0; i < s->n; i++)
    CHECK_AT("named mapper on target data", i, s->data[i],
             i < 100 ? 3 * i + 1 : -i);

  /* enter/exit data with the named mapper */
  s = &s_enter;
  span_init(s, 200, 5);
#pragma omp target enter data map(mapper(first_half), to : s_enter)
  CHECK("named mapper on enter data: first half present",
        omp_target_is_present(&s->data[99], dev) != 0, 1);
  CHECK("named mapper on enter data: second half not present",
        omp_target_is_present(&s->data[100], dev), 0);
  span_t *ds = omp_get_mapped_ptr(s, dev);
  CHECK("omp_get_mapped_ptr of the mapped struct", ds != NULL, 1);
  if (!ds)
    return;
#pragma omp target is_device_ptr(ds)
  {
    for (int i = 0; i < ds->n / 2; i++)
      ds->data[i] += 1;
  }
  for (int i = 0; i < s->n; i++)
    s->data[i] = -i; /* host only */
#pragma omp target exit data map(mapper(first_half), from : s_enter)
  for (int i = 0; i < s->n; i++)
    CHECK_AT("named mapper with enter/exit data", i, s->data[i],
             i < 100 ? 5 + i + 1 : -i);

  /* the other named mapper of the same type maps everything */
  s = &s_whole;
  span_init(s, 200, 0);
#pragma omp target enter data map(mapper(whole), to : s_whole)
  CHECK("second named mapper: last element present",
        omp_target_is_present(&s->data[199], dev) != 0, 1);
#pragma omp target exit data map(mapper(whole), delete : s_whole)
  CHECK("second named mapper: array removed by delete",
        omp_target_is_present(&s->data[199], dev), 0);
}

#ifdef TEST_NAMED_AND_DEFAULT_MAPPER
/* a named mapper must be used even if the type has a default mapper
 * (clang 19 uses the default one, see the top of the file) */
#pragma omp declare mapper(vec_half : vec_t v)                                \
    map(tofrom : v, v.data[0 : v.n / 2])
static vec_t v_named;
static void test_named_and_default_mapper(void) {
  vec_init(&v_named, 200, 0);
#pragma omp target enter data map(mapper(vec_half), to : v_named)
  CHECK("named mapper beside a default one: first half present",
        omp_target_is_present(&v_named.data[99], dev) != 0, 1);
  CHECK("named mapper beside a default one: second half not present",
        omp_target_is_present(&v_named.data[100], dev), 0);
#pragma omp target exit data map(mapper(vec_half), delete : v_named)
}
#endif

#ifdef TEST_MAPPER_ON_PRESENT_DATA
static vec_t v_present, v_nested;
/* a mapper on a construct whose object is already present must not
 * transfer anything (broken in clang 19, see the top of the file) */
static void test_mapper_on_present_data(void) {
  vec_t *v = &v_present;
  vec_init(v, 300, 0);
#pragma omp target enter data map(to : v_present)
  for (int i = 0; i < v->n; i++)
    v->data[i] = -4; /* host only */
#pragma omp target map(tofrom : v_present)
  {
    for (int i = 0; i < v_present.n; i++)
      v_present.data[i] += 1000;
  }
  for (int i = 0; i < v->n; i++)
    CHECK_AT("mapper on present data: no copy back", i, v->data[i], -4);
#pragma omp target exit data map(from : v_present)
  for (int i = 0; i < v->n; i++)
    CHECK_AT("mapper on present data: device result", i, v->data[i],
             i + 1000);

  v = &v_nested;
  vec_init(v, 300, 0);
#pragma omp target data map(tofrom : v_nested)
  {
    for (int i = 0; i < v->n; i++)
      v->data[i] = -4; /* host only */
#pragma omp target map(tofrom : v_nested)
    {
      for (int i = 0; i < v_nested.n; i++)
        v_nested.data[i] += 1000;
    }
    for (int i = 0; i < v->n; i++)
      CHECK_AT("mapper in nested region: no copy back", i, v->data[i], -4);
  }
  for (int i = 0; i < v->n; i++)
    CHECK_AT("mapper in nested region: device result", i, v->data[i],
             i + 1000);
}
#endif

int main(void) {
  dev = omp_get_default_device();
  test_default_mapper_target();
  test_default_mapper_enter_exit();
  test_array_of_structs();
  test_named_mapper();
#ifdef TEST_MAPPER_ON_PRESENT_DATA
  test_mapper_on_present_data();
#endif
#ifdef TEST_NAMED_AND_DEFAULT_MAPPER
  test_named_and_default_mapper();
#endif
  return finish("user_mapper");
}
