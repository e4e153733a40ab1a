/* OMP_TARGET_OFFLOAD: argv[1] says what the environment set.  "disabled":
 * no device, target regions run on the host; "default"/"mandatory": one
 * device (the cluster), regions run off the host. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int disabled = argc > 1 && strcmp(argv[1], "disabled") == 0;
    int host = -1, x = 1;
#pragma omp target map(tofrom : x) map(from : host)
    {
        host = omp_is_initial_device();
        x += 41;
    }
    int ndev = omp_get_num_devices();
    printf("policy %s: %d device(s), region on the host: %d, x=%d\n",
           argc > 1 ? argv[1] : "?", ndev, host, x);
    int ok = x == 42 && ndev == (disabled ? 0 : 1) && host == disabled;
    return ok ? 0 : 1;
}
