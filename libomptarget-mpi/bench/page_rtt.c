/* A raw MPI round trip of one 4 KiB page between ranks 0 and 1 (what a
 * page fault's service cannot beat; ompc-pages-bench sets one against the
 * other).  Prints "mpi_page_rtt_us=<t>" (best of 5 batches of 1000). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "page-rtt: run with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    static char page[4096];
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < 1000; i++) {
            if (rank == 0) {
                MPI_Send(page, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(page, sizeof(page), MPI_CHAR, 1, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(page, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(page, sizeof(page), MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t = (MPI_Wtime() - t0) / 1000;
        if (t < best)
            best = t;
    }
    if (rank == 0)
        printf("mpi_page_rtt_us=%.1f\n", best * 1e6);
    MPI_Finalize();
    return 0;
}
