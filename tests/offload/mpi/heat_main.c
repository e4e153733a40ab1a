/* An MPI program that offloads, shaped like users' (three files): a
 * periodic 1D heat equation over a Cartesian communicator, halos by
 * Sendrecv through `target update`, two target tasks per step, norms by a
 * teams reduction and Allreduce, a split communicator, a gather to rank 0,
 * and MPI-IO: written collectively, read back shifted by one rank.  Prints
 * one RESULT line, the same as built with stock clang and plain MPI. */
#include "heat.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    domain_t d;
    const int nglobal = 1 << 14, steps = 50;
    domain_init(&d, nglobal);
    double n0 = domain_norm(&d);
    for (int s = 0; s < steps; s++)
        domain_step(&d, 0.2);
    double n1 = domain_norm(&d);
    /* Even and odd ranks in two communicators; each sums its ranks. */
    MPI_Comm parity;
    MPI_Comm_split(MPI_COMM_WORLD, d.rank % 2, d.rank, &parity);
    int psize, psum;
    MPI_Comm_size(parity, &psize);
    MPI_Allreduce(&d.rank, &psum, 1, MPI_INT, MPI_SUM, parity);
    double *u = d.u;
    int m = d.n + 2;
    double *v = d.v;
#pragma omp target exit data map(from : u[0 : m]) map(delete : v[0 : m])
    double *all = d.rank == 0 ? malloc(sizeof(double) * nglobal) : NULL;
    MPI_Gather(u + 1, d.n, MPI_DOUBLE, all, d.n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_File fh;
    const char *path = argc > 1 ? argv[1] : "heat.out";
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_write_at_all(fh, (MPI_Offset)d.rank * d.n * sizeof(double), u + 1, d.n, MPI_DOUBLE,
                          MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    /* Read the file back, each rank its right neighbour's part. */
    double *back = malloc(sizeof(double) * d.n);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_File_read_at_all(fh, (MPI_Offset)d.right * d.n * sizeof(double), back, d.n, MPI_DOUBLE,
                         MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    double fsum = 0, fall = 0;
    for (int i = 0; i < d.n; i++)
        fsum += back[i] * ((d.right * d.n + i) % 11);
    MPI_Reduce(&fsum, &fall, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (d.rank == 0) {
        double cs = 0;
        for (int i = 0; i < nglobal; i++)
            cs += all[i] * (i % 13);
        printf("RESULT ranks %d norm0 %.12f norm1 %.12f gathered %.12f file %.9f parity %d/%d\n",
               d.size, n0, n1, cs, fall, psize, psum);
    }
    free(back);
    free(all);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&d.cart);
    MPI_Finalize();
    return 0;
}
