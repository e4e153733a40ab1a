/* A profiling tool as MPI's profiling interface allows: it defines MPI_Init,
 * MPI_Comm_size, MPI_Allreduce and MPI_Finalize, counts, and calls the
 * PMPI_ names.  Loaded ahead of ompc's library (LD_PRELOAD) its PMPI_
 * calls must still see the application's world, and loaded after it
 * (linked) it must see the calls at all.  At MPI_Finalize application rank
 * 0 prints what it saw: the world size the tool's own PMPI_Comm_size
 * returned, and the calls on MPI_COMM_WORLD it counted (ompc's own calls,
 * which also pass through a preloaded tool, use communicators of their
 * own). */
#include <mpi.h>
#include <stdio.h>

static int allreduces, sizes, world_at_init = -1;

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_at_init);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_at_init);
    return rc;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    sizes += comm == MPI_COMM_WORLD;
    return PMPI_Comm_size(comm, size);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm)
{
    allreduces += comm == MPI_COMM_WORLD;
    return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Finalize(void)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("pmpi_tool: world %d at init, %d MPI_Comm_size, %d MPI_Allreduce\n",
               world_at_init, sizes, allreduces);
    fflush(stdout);
    return PMPI_Finalize();
}
