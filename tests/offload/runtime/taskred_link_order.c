/* A task reduction joined by host tasks only, in a program linked with
 * libomp ahead of ompc's libomptarget (not by ompcc): correct, but the
 * runtime warns that target tasks' contributions could be lost. */
#include <stdio.h>

int main(void) {
  long sum = 0;
  int dev = 0;
#pragma omp target map(from : dev)
  dev = 1;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(+ : sum)
  for (int i = 0; i < 8; i++) {
#pragma omp task in_reduction(+ : sum) firstprivate(i)
    sum += 1L << i;
  }
  if (sum != 255 || dev != 1) {
    fprintf(stderr, "FAIL sum %ld dev %d\n", sum, dev);
    return 1;
  }
  printf("PASS taskred_link_order\n");
  return 0;
}
