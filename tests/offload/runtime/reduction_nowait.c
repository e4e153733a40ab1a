/* reduction on combined target constructs with nowait: chained through
 * depend on the reduction variable, and independent ones at once.  (LLVM's
 * own runtime hangs on this program, so it is not a conformance test.) */
#include <stdio.h>

int main(void) {
  long chain = 1, a = 0, b = 0, c = 0;
  int failures = 0;
#pragma omp parallel
#pragma omp single
  {
    for (int step = 0; step < 5; step++) {
#pragma omp target teams distribute parallel for reduction(+ : chain) nowait depend(inout : chain)
      for (int i = 0; i < 100; i++)
        chain += step + 1; /* each step adds onto the last one's result */
    }
#pragma omp target teams distribute parallel for reduction(+ : a) nowait depend(out : a)
    for (int i = 0; i < 1000; i++)
      a += i;
#pragma omp target teams distribute parallel for reduction(max : b) nowait depend(out : b)
    for (int i = 0; i < 1000; i++)
      b = b > (i * 7) % 1000 ? b : (i * 7) % 1000;
#pragma omp target parallel for reduction(+ : c) nowait depend(out : c)
    for (int i = 0; i < 1000; i++)
      c += 3;
#pragma omp taskwait
  }
  if (chain != 1501) {
    fprintf(stderr, "FAIL chained reduction (got %ld, expected 1501)\n", chain);
    failures++;
  }
  if (a != 499500 || b != 999 || c != 3000) {
    fprintf(stderr, "FAIL independent reductions (got %ld %ld %ld)\n", a, b, c);
    failures++;
  }
  if (!failures)
    printf("PASS reduction_nowait\n");
  return failures != 0;
}
