/* User mistakes in offloading programs, one per mode (argv[1]).  Each must
 * end the job with a message naming the cause and the source location; the
 * CTest wrapper checks the message and the non-zero exit. */
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int a[100];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "present") == 0) {
        /* 'present' on data that was never mapped */
#pragma omp target map(present, tofrom: a[0:10])
        a[0] = 1;
    } else if (strcmp(mode, "overlap") == 0) {
        /* a section that extends an existing mapping */
#pragma omp target enter data map(to: a[0:10])
#pragma omp target map(tofrom: a[5:10])
        a[5] = 1;
    } else if (strcmp(mode, "device") == 0) {
        /* a device number that does not exist */
#pragma omp target device(7) map(tofrom: a[0:1])
        a[0] = 1;
    } else if (strcmp(mode, "sections") == 0) {
        /* two sections mapped one by one, then reached through one array */
#pragma omp target enter data map(alloc: a[0:10])
#pragma omp target enter data map(alloc: a[50:10])
#pragma omp target map(tofrom: a[0:10], a[50:10])
        {
            a[0] = 1;
            a[50] = 2;
        }
    } else if (strcmp(mode, "worker-dies") == 0) {
        /* the worker running the kernel is killed */
#pragma omp target map(tofrom: a[0:1])
        {
            if (!omp_is_initial_device() || omp_get_num_devices() >= 0)
                kill(getpid(), SIGKILL);
            a[0] = 1;
        }
    } else {
        fprintf(stderr, "usage: %s present|overlap|device|sections|worker-dies\n", argv[0]);
        return 2;
    }
    printf("offload_errors %s: the mistake went unnoticed (a[0]=%d)\n", mode, a[0]);
    return 0;
}
