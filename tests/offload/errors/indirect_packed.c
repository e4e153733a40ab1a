/* Indirect functions packed closer than 14 bytes (-Os aligns functions to
 * 1 byte): a worker cannot place its jump to the device function at the
 * head's address of each, so a job with workers stops at start-up naming
 * both and the flag that fixes it.  On one rank (no workers, no jumps)
 * the program runs. */
#include <stdio.h>

int plus1(int x) { return x + 1; }
int plus2(int x) { return x + 2; }
int plus3(int x) { return x + 3; }
#pragma omp declare target to(plus1, plus2, plus3) indirect

int main(void) {
  int (*f)(int) = plus2;
  int r = 0;
#pragma omp target map(from : r)
  r = f(40);
  printf("r = %d\n", r);
  return r == 42 ? 0 : 1;
}
