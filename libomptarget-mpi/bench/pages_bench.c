/* Device pages on demand: what one fault costs.  Run under mpiexec with
 * 2 ranks (one worker) next to ompc-page-rtt, a raw MPI round trip of a
 * page between the same two ranks:
 *   fault_us  - one page fault's service as the kernel sees it: a kernel
 *               reading one word from each of NP buffers it reaches only
 *               through pointers (one fault each), less the same kernel
 *               over buffers it maps (no fault), per buffer;
 *   seq_ms    - a kernel reading a 4 MiB buffer it reaches only through a
 *               pointer, sequentially: OMPC_FAULT_BLOCK decides how many
 *               faults that takes (the block size that pays);
 * Prints one line "fault_us=<t> seq_ms=<t>" (best of 5). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NP 256
#define SEQ (4L << 20)

int main(void)
{
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    /* Hidden from the runtime, which takes a device address passed by
     * value for a use of its buffer. */
    const uintptr_t key = 0x5a5a5a5a5a5a5a5aull;
    uintptr_t *ptrs = malloc(NP * sizeof(*ptrs));
    long *host_pages = calloc(NP, 4096);
    for (int i = 0; i < NP; i++) {
        long *p = omp_target_alloc(4096, dev);
        long v = i;
        if (!p || omp_target_memcpy(p, &v, sizeof(v), 0, 0, dev, host))
            return 2;
        ptrs[i] = (uintptr_t)p ^ key;
        host_pages[i * 512] = i;
    }
    char *seq = omp_target_alloc(SEQ, dev);
    char *ones = malloc(SEQ);
    for (long i = 0; i < SEQ; i++)
        ones[i] = 1;
    if (!seq || omp_target_memcpy(seq, ones, SEQ, 0, 0, dev, host))
        return 2;
    uintptr_t hseq = (uintptr_t)seq ^ key;
#pragma omp target enter data map(to : host_pages[ : NP * 512])
    double best_fault = 1e30, best_seq = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        long s1 = 0, s2 = 0, s3 = 0;
        double t0 = omp_get_wtime();
#pragma omp target map(to : ptrs[ : NP]) map(tofrom : s1) firstprivate(key)
        for (int i = 0; i < NP; i++)
            s1 += *(long *)(ptrs[i] ^ key);
        double t1 = omp_get_wtime();
#pragma omp target map(tofrom : s2) map(to : ptrs[ : NP])
        for (int i = 0; i < NP; i++)
            s2 += host_pages[i * 512] + (long)(ptrs[i] & 0);
        double t2 = omp_get_wtime();
#pragma omp target map(tofrom : s3) firstprivate(hseq, key)
        for (long i = 0; i < SEQ; i += 64)
            s3 += ((char *)(hseq ^ key))[i];
        double t3 = omp_get_wtime();
        if (s1 != (long)NP * (NP - 1) / 2 || s2 != s1 || s3 != SEQ / 64) {
            fprintf(stderr, "pages-bench: wrong sums %ld %ld %ld\n", s1, s2, s3);
            return 1;
        }
        double f = ((t1 - t0) - (t2 - t1)) / NP;
        if (f < best_fault)
            best_fault = f;
        if (t3 - t2 < best_seq)
            best_seq = t3 - t2;
    }
    printf("fault_us=%.1f seq_ms=%.2f\n", best_fault * 1e6, best_seq * 1e3);
    return 0;
}
