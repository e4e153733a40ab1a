#include "heat.h"
#include <math.h>
#include <stdlib.h>

void domain_init(domain_t *d, int nglobal)
{
    int dims[1] = {0}, periods[1] = {1};
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 1, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 1, &d->cart);
    MPI_Comm_rank(d->cart, &d->rank);
    MPI_Comm_size(d->cart, &d->size);
    MPI_Cart_shift(d->cart, 0, 1, &d->left, &d->right);
    d->n = nglobal / d->size;
    d->u = calloc(d->n + 2, sizeof(double));
    d->v = calloc(d->n + 2, sizeof(double));
    for (int i = 1; i <= d->n; i++) {
        int g = d->rank * d->n + i - 1;
        d->u[i] = sin(2 * M_PI * g / nglobal) + (g % 7) * 0.01;
    }
    double *u = d->u, *v = d->v;
    int m = d->n + 2;
#pragma omp target enter data map(to : u[0 : m]) map(alloc : v[0 : m])
}

void domain_step(domain_t *d, double alpha)
{
    double *u = d->u, *v = d->v;
    int n = d->n, m = n + 2;
    /* Halos: the edge cells come back from the device, go to the
     * neighbours, and the halos go to the device. */
#pragma omp target update from(u[1 : 1])
#pragma omp target update from(u[n : 1])
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, d->left, 0, &u[n + 1], 1, MPI_DOUBLE, d->right, 0,
                 d->cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, d->right, 1, &u[0], 1, MPI_DOUBLE, d->left, 1, d->cart,
                 MPI_STATUS_IGNORE);
#pragma omp target update to(u[0 : 1])
#pragma omp target update to(u[n + 1 : 1])
    int half = n / 2;
#pragma omp target nowait depend(out : v[1 : half]) map(present, alloc : u[0 : m], v[0 : m])
#pragma omp parallel for
    for (int i = 1; i <= half; i++)
        v[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1]);
#pragma omp target nowait depend(out : v[half + 1 : n - half]) map(present, alloc : u[0 : m], v[0 : m])
#pragma omp parallel for
    for (int i = half + 1; i <= n; i++)
        v[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1]);
#pragma omp taskwait
#pragma omp target map(present, alloc : u[0 : m], v[0 : m])
    for (int i = 1; i <= n; i++)
        u[i] = v[i];
}

double domain_norm(const domain_t *d)
{
    const double *u = d->u;
    int n = d->n, m = n + 2;
    double s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(present, to : u[0 : m])
    for (int i = 1; i <= n; i++)
        s += u[i] * u[i];
    double g = 0;
    MPI_Allreduce(&s, &g, 1, MPI_DOUBLE, MPI_SUM, d->cart);
    return sqrt(g);
}
