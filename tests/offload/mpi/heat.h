/* The domain of heat_main.c: one application rank's cells and halos. */
#pragma once
#include <mpi.h>
typedef struct {
    MPI_Comm cart;
    int rank, size, left, right;
    int n;       /* local cells */
    double *u, *v; /* n + 2 each, halos at 0 and n + 1 */
} domain_t;
void domain_init(domain_t *d, int nglobal);
void domain_step(domain_t *d, double alpha);
double domain_norm(const domain_t *d);
