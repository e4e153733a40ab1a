/* Requirements registered the pre-LLVM-19 way, through
 * __tgt_register_requires called from a constructor (as objects built by
 * older compilers do), follow the same rule as those clang 19 emits as
 * offload entries.  The flags come from REQUIRES_FLAGS: 2 reverse_offload
 * and 8 unified_shared_memory are refused, 0x40 is unknown and refused,
 * 5 (none | unified_address) and 0x10 (dynamic_allocators) are accepted
 * and the program runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void __tgt_register_requires(int64_t flags);

__attribute__((constructor)) static void register_old_style(void) {
  const char *v = getenv("REQUIRES_FLAGS");
  if (v)
    __tgt_register_requires(strtoll(v, NULL, 0));
}

int main(void) {
  int x = 20;
#pragma omp target map(tofrom : x)
  x += 22;
  printf("x = %d\n", x);
  return x == 42 ? 0 : 1;
}
