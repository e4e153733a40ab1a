/* `requires unified_shared_memory` is refused at start-up, naming the
 * requirement, this file and why a cluster cannot provide it (clang 19
 * passes it on as an offload entry with flags 0x10 and data 0x8). */
#include <stdio.h>

#pragma omp requires unified_shared_memory

int main(void) {
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  printf("x = %d\n", x);
  return 0;
}
