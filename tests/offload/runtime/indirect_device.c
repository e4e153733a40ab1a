/*
 * indirect_device.c - a call through a pointer to a `declare target
 * indirect` function runs the *device* version of the function, the one
 * that sees the device copy of declare target variables.
 *
 * The function returns a declare target variable whose host and device
 * copies differ.  A pointer passed as a kernel argument is translated to
 * the device function on every executor, so the device copy is read on
 * any rank count.  A pointer read from mapped data is the head's address:
 * on workers it jumps to the device function; on one rank the kernel runs
 * in the head's process, where that address is the host function, which
 * reads the host copy (as LLVM's own x86_64 plugin does for every call).
 * argv[1] says which one the data path must reach: "device" or "host".
 *
 * (Not a conformance test: LLVM's runtime calls the host version on both
 * paths.)
 */
#include <stdio.h>
#include <string.h>

#pragma omp declare target
int tag = 1;
#pragma omp end declare target

int tagged(int x) { return tag * 1000 + x; }
#pragma omp declare target to(tagged) indirect

struct holder {
  int (*fn)(int);
  int arg;
};

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "device") && strcmp(argv[1], "host"))) {
    fprintf(stderr, "usage: %s device|host\n", argv[0]);
    return 2;
  }
  int data_tag = strcmp(argv[1], "device") == 0 ? 1 : 7;
  tag = 7; /* host copy only: the device copy keeps 1 */
  int fails = 0;

  int (*f)(int) = tagged;
  int r = 0;
#pragma omp target map(from : r)
  r = f(5);
  if (r != 1005) {
    fprintf(stderr, "FAIL pointer argument: got %d, expected 1005\n", r);
    fails++;
  }

  struct holder h = {tagged, 6};
#pragma omp target map(to : h) map(from : r)
  r = h.fn(h.arg);
  if (r != data_tag * 1000 + 6) {
    fprintf(stderr, "FAIL pointer in mapped data: got %d, expected %d\n", r,
            data_tag * 1000 + 6);
    fails++;
  }
  if (fails)
    return 1;
  printf("PASS indirect_device\n");
  return 0;
}
