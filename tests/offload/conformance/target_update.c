/*
 * target_update.c - the `target update` directive.
 *
 * Checks `target update to(...)` / `from(...)` on whole arrays and on array
 * sections (1-D with lo > 0, and a block of whole rows of a 2-D array)
 * inside a target data region, to and from in one directive, an `if`
 * clause that evaluates to false (no transfer), and updates of single
 * struct members (a scalar member and a section of an array member).
 *
 * Why: target update is the only way to move data while it stays mapped;
 * it must copy exactly the named bytes in the named direction. Values on
 * both sides are made to differ before every update, so copying too much,
 * too little or the wrong way is visible.
 */
#include <stdio.h>

#include "offload_check.h"

#define N 600
#define LO 200
#define LEN 150
#define ROWS 12
#define COLS 16
#define M 32

struct rec {
  int x;
  double y;
  int arr[M];
};

static int a[N], b[N], snap[N];
static int m[ROWS][COLS];

static void test_whole_and_sections(void) {
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = 0;
  }
#pragma omp target data map(to : a) map(alloc : b)
  {
    /* update to of the whole array: device sees the new host values */
    for (int i = 0; i < N; i++)
      a[i] = 10 * i;
#pragma omp target update to(a)
#pragma omp target
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        b[i] = a[i] + 1;
    }
    /* b is alloc: only an update brings it to the host */
    for (int i = 0; i < N; i++)
      CHECK_AT("no transfer before target update from", i, b[i], 0);
#pragma omp target update from(b)
    for (int i = 0; i < N; i++)
      CHECK_AT("update from(whole array)", i, b[i], 10 * i + 1);

    /* update to of a section: only the section changes on the device */
    for (int i = 0; i < N; i++)
      a[i] = -i;
#pragma omp target update to(a[LO : LEN])
#pragma omp target
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        b[i] = a[i];
    }
#pragma omp target update from(b)
    for (int i = 0; i < N; i++) {
      int exp = (i >= LO && i < LO + LEN) ? -i : 10 * i;
      CHECK_AT("update to(a[lo:len]) copies only the section", i, b[i], exp);
    }

    /* update from of a section: only the section changes on the host */
#pragma omp target
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        b[i] = 7 * i + 3;
    }
    for (int i = 0; i < N; i++)
      b[i] = -5;
#pragma omp target update from(b[LO : LEN])
    for (int i = 0; i < N; i++) {
      int exp = (i >= LO && i < LO + LEN) ? 7 * i + 3 : -5;
      CHECK_AT("update from(b[lo:len]) copies only the section", i, b[i],
               exp);
    }

    /* to and from in the same directive */
    for (int i = 0; i < N; i++)
      a[i] = 2 * i;
#pragma omp target update to(a[0 : LO]) from(b[0 : LO])
    for (int i = 0; i < LO; i++)
      CHECK_AT("from part of a combined update", i, b[i], 7 * i + 3);
#pragma omp target map(from : snap)
    {
      for (int i = 0; i < N; i++)
        snap[i] = a[i];
    }
    for (int i = 0; i < N; i++) {
      int exp = i < LO ? 2 * i : (i < LO + LEN ? -i : 10 * i);
      CHECK_AT("to part of a combined update", i, snap[i], exp);
    }

    /* an if clause that is false suppresses the transfer */
    int do_it = 0;
    for (int i = 0; i < N; i++)
      b[i] = 1;
#pragma omp target update from(b) if (do_it)
    for (int i = 0; i < N; i++)
      CHECK_AT("update with if(false) must not transfer", i, b[i], 1);
    do_it = 1;
#pragma omp target update from(b) if (do_it)
    CHECK("update with if(true) transfers", b[N - 1], 7 * (N - 1) + 3);
  }
  /* a was mapped to: the end of the region does not copy it back */
  for (int i = 0; i < N; i++)
    CHECK_AT("map(to) not copied back after updates", i, a[i], 2 * i);
}

static void test_rows(void) {
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++)
      m[r][c] = r * 100 + c;
#pragma omp target data map(to : m)
  {
#pragma omp target
    {
#pragma omp parallel for
      for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
          m[r][c] = -m[r][c];
    }
    /* rows 3..6 come back, the rest stays as on the host */
#pragma omp target update from(m[3 : 4][0 : COLS])
    for (int r = 0; r < ROWS; r++)
      for (int c = 0; c < COLS; c++) {
        int v = r * 100 + c;
        CHECK_AT("update from(m[3:4][0:COLS]) rows", r * COLS + c, m[r][c],
                 (r >= 3 && r < 7) ? -v : v);
      }
  }
}

static void test_struct_members(void) {
  struct rec s;
  s.x = 1;
  s.y = 0.5;
  for (int i = 0; i < M; i++)
    s.arr[i] = i;
  int gx = 0;
  double gy = 0.0;
#pragma omp target data map(to : s)
  {
    s.x = 42;   /* host only, then pushed by the update */
    s.y = 99.0; /* host only, never pushed */
#pragma omp target update to(s.x)
#pragma omp target map(from : gx, gy)
    {
      gx = s.x;
      gy = s.y;
#pragma omp parallel for
      for (int i = 0; i < M; i++)
        s.arr[i] = s.arr[i] * 3 + s.x;
      s.y = 1.75;
    }
    CHECK("update to(s.x) reaches the device", gx, 42);
    CHECK_D("member not named in update to keeps the old device value", gy,
            0.5);
    for (int i = 0; i < M; i++)
      CHECK_AT("device member not copied back without update", i, s.arr[i],
               i);
#pragma omp target update from(s.arr[4 : 8])
    for (int i = 0; i < M; i++) {
      int exp = (i >= 4 && i < 12) ? 3 * i + 42 : i;
      CHECK_AT("update from(s.arr[4:8]) copies only the section", i,
               s.arr[i], exp);
    }
    CHECK_D("update of s.arr must not touch s.y", s.y, 99.0);
#pragma omp target update from(s.y)
    CHECK_D("update from(s.y)", s.y, 1.75);
    CHECK("update from(s.y) must not touch s.x", s.x, 42);
  }
}

int main(void) {
  test_whole_and_sections();
  test_rows();
  test_struct_members();
  return finish("target_update");
}
