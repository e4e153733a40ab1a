/* A kernel that ends its process (argv[1]): exit-3 calls exit(3),
 * _exit-4 calls _exit(4), abort calls abort().  The job must end with a
 * line naming the rank, the kernel and the status, and an exit code that
 * says it (3, 4, 128 + SIGABRT). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int how = strcmp(mode, "exit-3") == 0 ? 1 : strcmp(mode, "_exit-4") == 0 ? 2
            : strcmp(mode, "abort") == 0 ? 3 : 0;
    if (!how) {
        fprintf(stderr, "usage: %s exit-3|_exit-4|abort\n", argv[0]);
        return 2;
    }
    int x = 0;
#pragma omp target map(tofrom: x)
    {
        if (how == 1)
            exit(3);
        if (how == 2)
            _exit(4);
        abort();
    }
    printf("FAIL: the kernel returned (x = %d)\n", x);
    return 0;
}
