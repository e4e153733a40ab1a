/*
 * offload_check.h - result checking shared by the offloading tests.
 *
 * Every test in this folder compares what came back from the device with a
 * host reference and reports the same way: one line
 * `FAIL <file>:<line>: <what> ... (got X, expected Y)` on stderr per
 * mismatch (at most REPORT_LIMIT of them), then `finish(topic)` prints
 * `PASS <topic>` and returns 0, or prints the failure count and returns 1.
 * The helpers live here once so that all tests report alike. Each test is
 * its own program and includes this header once, hence the `static`
 * definitions. A test that wants a different REPORT_LIMIT defines it before
 * the #include; checks only one test needs (they may use that test's N or
 * types) stay in that test.
 */
#ifndef OFFLOAD_CHECK_H
#define OFFLOAD_CHECK_H

#include <stdio.h>

#ifndef REPORT_LIMIT
#define REPORT_LIMIT 25
#endif

static int failures;

static void fail_at(const char *file, int line, const char *what, long idx,
                    long long got, long long exp) {
  if (failures++ >= REPORT_LIMIT)
    return;
  if (idx >= 0)
    fprintf(stderr, "FAIL %s:%d: %s [%ld] (got %lld, expected %lld)\n", file,
            line, what, idx, got, exp);
  else
    fprintf(stderr, "FAIL %s:%d: %s (got %lld, expected %lld)\n", file, line,
            what, got, exp);
}

/* only the tests that compare doubles (CHECK_D) call this one */
__attribute__((unused)) static void fail_at_d(const char *file, int line,
                                              const char *what, double got,
                                              double exp) {
  if (failures++ >= REPORT_LIMIT)
    return;
  fprintf(stderr, "FAIL %s:%d: %s (got %.17g, expected %.17g)\n", file, line,
          what, got, exp);
}

/* integer comparison of element idx (idx < 0: not an element) */
#define CHECK_AT(what, idx, got, exp)                                          \
  do {                                                                         \
    long long g_ = (long long)(got), e_ = (long long)(exp);                    \
    if (g_ != e_)                                                              \
      fail_at(__FILE__, __LINE__, (what), (long)(idx), g_, e_);                \
  } while (0)
#define CHECK(what, got, exp) CHECK_AT(what, -1L, got, exp)
/* exact comparison of doubles */
#define CHECK_D(what, got, exp)                                                \
  do {                                                                         \
    double g_ = (got), e_ = (exp);                                             \
    if (g_ != e_)                                                              \
      fail_at_d(__FILE__, __LINE__, (what), g_, e_);                           \
  } while (0)

/* the test's result: PASS line and 0, or the failure summary and 1 */
static int finish(const char *topic) {
  if (failures) {
    if (failures > REPORT_LIMIT)
      fprintf(stderr, "FAIL %s: %d further failure(s) not shown\n", topic,
              failures - REPORT_LIMIT);
    fprintf(stderr, "%s: %d check(s) failed\n", topic, failures);
    return 1;
  }
  printf("PASS %s\n", topic);
  return 0;
}

#endif /* OFFLOAD_CHECK_H */
