/* mixed_kernels.h - mixed_kernels.c's functions, for C and C++. */
#ifndef MIXED_KERNELS_H
#define MIXED_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

#pragma omp declare target
long c_mix(long x); /* 5x - 3 */
#pragma omp end declare target
/* v[i] = c_mix(v[i]) * k on the device */
void c_scale(long *v, long n, long k);

#ifdef __cplusplus
}
#endif

#endif
