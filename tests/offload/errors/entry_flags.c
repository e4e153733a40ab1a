/* An offload entry of a kind clang 19 does not emit (here a device
 * destructor kernel, flags 0x4, as compilers before LLVM 19 emitted) is
 * refused at start-up by its name and flags instead of being taken for a
 * target region.  The entry is placed in the entries section by hand, as
 * an object built by another compiler would. */
#include <stdint.h>
#include <stdio.h>

struct entry {
  void *addr;
  const char *name;
  uint64_t size;
  int32_t flags;
  int32_t data;
};

static char old_dtor_id;
__attribute__((section("omp_offloading_entries"), used)) static const struct entry
    old_dtor = {&old_dtor_id, "__omp_offloading__old_dtor", 0, 0x4, 0};

int main(void) {
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  printf("x = %d\n", x);
  return 0;
}
