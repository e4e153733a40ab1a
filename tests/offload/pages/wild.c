/* Faults no page can serve end the job naming the kernel, as before
 * device pages on demand (argv[1]):
 *   outside: a wild pointer outside the device address range;
 *   freed:   a device address whose buffer was freed (inside the range,
 *            but no buffer holds it). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int dev = omp_get_default_device();
    uintptr_t a;
    if (!strcmp(mode, "outside")) {
        a = 64;
    } else if (!strcmp(mode, "freed")) {
        void *p = omp_target_alloc(1 << 16, dev);
        if (!p)
            return 2;
        omp_target_free(p, dev);
        a = (uintptr_t)p + 8192;
    } else {
        fprintf(stderr, "usage: %s outside|freed\n", argv[0]);
        return 2;
    }
    /* Hidden from the runtime, which would take a device address passed
     * by value for a use of its buffer. */
    const uintptr_t key = 0x5a5a5a5a5a5a5a5aull;
    uintptr_t h = a ^ key;
    long x = 0;
#pragma omp target map(from : x) firstprivate(h, key)
    x = *(volatile long *)(h ^ key);
    printf("FAIL: the kernel read %ld\n", x);
    return 0;
}
