/* ompc-prot-bench: what protecting workers' copies of device buffers would
 * cost (docs/architecture.md, "Device pages on demand", "Not yet"), on
 * the machine it runs on, without the runtime.
 *
 *   ompc-prot-bench prot [reps]   one mprotect call (PROT_NONE, then back
 *                                 to read-write) on a resident range of
 *                                 4 KiB, 64 KiB and 1 MiB, alone, beside
 *                                 four sleeping threads, and beside one
 *                                 spinning thread (a running kernel's)
 *   ompc-prot-bench alias [reps]  a kernel's loops (first touch, three
 *                                 streaming sums, random 8-byte reads)
 *                                 over 256 MiB of private anonymous
 *                                 memory (device memory today), the same
 *                                 with MADV_HUGEPAGE (what a machine
 *                                 whose transparent huge pages are
 *                                 "always" gives it), and shared memfd
 *                                 memory mapped twice (a kernels' view
 *                                 beside an always-accessible alias)
 *
 * Each figure is the median of reps runs (default 5), the variants
 * alternated within each run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ALIAS_BYTES ((size_t)256 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)
#define PROT_CALLS 4000
#define RANDOM_READS 20000000
#define MAX_REPS 64

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------- prot */
static _Atomic int helpers_stop;

static void *helper_spin(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&helpers_stop, memory_order_relaxed))
        x++;
    return NULL;
}

static void *helper_sleep(void *arg)
{
    (void)arg;
    while (!atomic_load(&helpers_stop)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return NULL;
}

/* Microseconds per mprotect call on len resident bytes. */
static int prot_once(size_t len, double *us_p)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    memset(p, 1, len);
    int rc = 0;
    double t0 = now_s();
    for (int i = 0; i < PROT_CALLS && rc == 0; i++)
        if (mprotect(p, len, PROT_NONE) != 0 ||
            mprotect(p, len, PROT_READ | PROT_WRITE) != 0)
            rc = -1;
    double t1 = now_s();
    munmap(p, len);
    *us_p = (t1 - t0) / (2.0 * PROT_CALLS) * 1e6;
    return rc;
}

static int run_prot(int reps)
{
    static const size_t sizes[] = {4096, 65536, 1 << 20};
    static const char *const beside[] = {"alone", "4 sleeping threads",
                                         "1 spinning thread"};
    double us[3][3][MAX_REPS];
    for (int r = 0; r < reps; r++)
        for (int b = 0; b < 3; b++) {
            pthread_t th[4];
            int nth = b == 0 ? 0 : b == 1 ? 4 : 1;
            atomic_store(&helpers_stop, 0);
            for (int i = 0; i < nth; i++)
                if (pthread_create(&th[i], NULL, b == 1 ? helper_sleep : helper_spin,
                                   NULL) != 0) {
                    fprintf(stderr, "prot: pthread_create failed\n");
                    return 1;
                }
            int rc = 0;
            for (int s = 0; s < 3 && rc == 0; s++)
                rc = prot_once(sizes[s], &us[b][s][r]);
            atomic_store(&helpers_stop, 1);
            for (int i = 0; i < nth; i++)
                pthread_join(th[i], NULL);
            if (rc != 0) {
                perror("prot: mmap or mprotect");
                return 1;
            }
        }
    printf("mprotect, microseconds per call (median of %d runs of %d pairs)\n", reps,
           PROT_CALLS);
    printf("%-20s %10s %10s %10s\n", "beside", "4 KiB", "64 KiB", "1 MiB");
    for (int b = 0; b < 3; b++)
        printf("%-20s %10.2f %10.2f %10.2f\n", beside[b], median(us[b][0], reps),
               median(us[b][1], reps), median(us[b][2], reps));
    return 0;
}

/* ------------------------------------------------------------ alias */
typedef struct loops {
    double touch, stream, random;
} loops_t;

static uint64_t sink;

static void kernel_loops(char *p, loops_t *l)
{
    double t0 = now_s();
    for (size_t i = 0; i < ALIAS_BYTES; i += 4096)
        p[i] = 1;
    double t1 = now_s();
    const uint64_t *v = (const uint64_t *)p;
    size_t n = ALIAS_BYTES / 8;
    uint64_t s = 0;
    for (int r = 0; r < 3; r++)
        for (size_t i = 0; i < n; i++)
            s += v[i];
    double t2 = now_s();
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < RANDOM_READS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s += v[x % n];
    }
    double t3 = now_s();
    sink += s;
    *l = (loops_t){t1 - t0, t2 - t1, t3 - t2};
}

/* variant 0: private anonymous; 1: the same, MADV_HUGEPAGE; 2: memfd
 * mapped twice, the loops on the first mapping. */
static int alias_once(int variant, loops_t *l)
{
    if (variant < 2) {
        char *raw = mmap(NULL, ALIAS_BYTES + HUGE_ALIGN, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == MAP_FAILED)
            return -1;
        char *p = (char *)(((uintptr_t)raw + HUGE_ALIGN - 1) &
                           ~(uintptr_t)(HUGE_ALIGN - 1));
        if (variant == 1 && madvise(p, ALIAS_BYTES, MADV_HUGEPAGE) != 0) {
            munmap(raw, ALIAS_BYTES + HUGE_ALIGN);
            return -1;
        }
        kernel_loops(p, l);
        munmap(raw, ALIAS_BYTES + HUGE_ALIGN);
        return 0;
    }
    int fd = memfd_create("ompc-prot-bench", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = -1;
    char *dev = MAP_FAILED, *alias = MAP_FAILED;
    if (ftruncate(fd, (off_t)ALIAS_BYTES) != 0)
        goto err_fd;
    dev = mmap(NULL, ALIAS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (dev == MAP_FAILED)
        goto err_fd;
    alias = mmap(NULL, ALIAS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (alias == MAP_FAILED)
        goto err_dev;
    /* Shared memory gets huge pages only if the system allows it for
     * shmem (shmem_enabled); asked for all the same. */
    (void)madvise(dev, ALIAS_BYTES, MADV_HUGEPAGE);
    kernel_loops(dev, l);
    /* The alias sees the kernels' bytes. */
    rc = alias[4096] == 1 ? 0 : -1;
    munmap(alias, ALIAS_BYTES);
err_dev:
    munmap(dev, ALIAS_BYTES);
err_fd:
    close(fd);
    return rc;
}

static void print_thp(const char *what, const char *path)
{
    char line[256] = "?";
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(line, sizeof(line), f))
            strcpy(line, "?");
        fclose(f);
    }
    line[strcspn(line, "\n")] = 0;
    printf("transparent huge pages, %s: %s\n", what, line);
}

static int run_alias(int reps)
{
    static const char *const names[] = {"anonymous (today)", "anonymous, THP advised",
                                        "memfd + alias"};
    double v[3][3][MAX_REPS];
    print_thp("anonymous", "/sys/kernel/mm/transparent_hugepage/enabled");
    print_thp("shmem", "/sys/kernel/mm/transparent_hugepage/shmem_enabled");
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < 3; k++) {
            int var = (k + r) % 3; /* alternated: none always goes first */
            loops_t l;
            if (alias_once(var, &l) != 0) {
                perror("alias: mapping");
                return 1;
            }
            v[var][0][r] = l.touch;
            v[var][1][r] = l.stream;
            v[var][2][r] = l.random;
        }
    printf("a kernel's loops over 256 MiB, seconds (median of %d runs)\n", reps);
    printf("%-24s %10s %10s %10s\n", "memory", "touch", "stream x3", "random");
    for (int k = 0; k < 3; k++)
        printf("%-24s %10.3f %10.3f %10.3f\n", names[k], median(v[k][0], reps),
               median(v[k][1], reps), median(v[k][2], reps));
    return 0;
}

int main(int argc, char **argv)
{
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (argc < 2 || reps < 1 || reps > MAX_REPS ||
        (strcmp(argv[1], "prot") && strcmp(argv[1], "alias"))) {
        fprintf(stderr, "usage: %s prot|alias [reps, 1-%d]\n", argv[0], MAX_REPS);
        return 2;
    }
    return !strcmp(argv[1], "prot") ? run_prot(reps) : run_alias(reps);
}
