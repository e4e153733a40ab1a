/* target nowait regions run asynchronously: no OpenMP thread waits for a
 * kernel, so the number of regions in flight is not capped by libomp's
 * hidden helper threads (8).  40 kernels each count themselves in and out
 * of a shared tally and wait until more than the threshold given on the
 * command line are in at once; the most ever in at once must exceed it.
 *
 * Counted, not timed: a kernel leaves only once the tally passed the
 * threshold, so however slowly a loaded machine launches them, the
 * kernels that are not capped all end up in together.  Under a cap they
 * never do: the first kernel to wait GIVE_UP_S gives up, the rest follow
 * at once, and the count printed is the cap.
 *
 * The tally lives in a POSIX shared memory object named after the head's
 * pid, so every rank must run on the head's host (as ctest runs them). */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define K 40
#define GIVE_UP_S 30

struct tally {
    atomic_int in;      /* kernels in right now */
    atomic_int most;    /* the most ever in at once */
    atomic_int gave_up; /* a kernel waited GIVE_UP_S in vain */
};

#pragma omp declare target
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void tally_name(char *buf, size_t cap, int head_pid)
{
    snprintf(buf, cap, "/ompc-inflight-%d", head_pid);
}

/* One kernel: in, wait for more than `threshold` in or a give-up, out.
 * Returns 0, or 1 if the tally could not be opened. */
static int kernel(int head_pid, int threshold)
{
    char name[64];
    tally_name(name, sizeof(name), head_pid);
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return 1;
    struct tally *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (t == MAP_FAILED)
        return 1;
    int in = atomic_fetch_add(&t->in, 1) + 1;
    int most = atomic_load(&t->most);
    while (in > most && !atomic_compare_exchange_weak(&t->most, &most, in))
        ;
    double give_up = now_s() + GIVE_UP_S;
    while (atomic_load(&t->most) <= threshold && !atomic_load(&t->gave_up)) {
        if (now_s() > give_up) {
            atomic_store(&t->gave_up, 1);
            break;
        }
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    atomic_fetch_sub(&t->in, 1);
    munmap(t, sizeof(*t));
    return 0;
}
#pragma omp end declare target

int main(int argc, char **argv)
{
    int threshold = argc > 1 ? atoi(argv[1]) : 8;
    int head_pid = (int)getpid();
    char name[64];
    tally_name(name, sizeof(name), head_pid);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(struct tally)) != 0) {
        perror("inflight: shared tally");
        return 1;
    }
    struct tally *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (t == MAP_FAILED) {
        perror("inflight: mmap");
        shm_unlink(name);
        return 1;
    }
    int bad_open[K] = {0};
#pragma omp parallel
#pragma omp single
    for (int k = 0; k < K; k++) {
#pragma omp target nowait map(from : bad_open[k : 1]) firstprivate(k, head_pid, threshold)
        bad_open[k] = kernel(head_pid, threshold);
    }
    shm_unlink(name);
    int unopened = 0;
    for (int k = 0; k < K; k++)
        unopened += bad_open[k];
    int most = atomic_load(&t->most), gave_up = atomic_load(&t->gave_up);
    munmap(t, sizeof(*t));
    if (unopened) {
        printf("inflight: %d kernels could not open the tally %s (ranks on "
               "another host?)\n", unopened, name);
        return 1;
    }
    printf("inflight: %d of %d kernels were in flight at once (need > %d)%s\n",
           most, K, threshold, gave_up ? "; a kernel gave up waiting for more" : "");
    return most > threshold ? 0 : 1;
}
