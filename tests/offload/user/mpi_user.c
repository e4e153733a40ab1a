/* An MPI+OpenMP-offload program as users write them: MPI_Init_thread
 * (FUNNELED), a periodic Cartesian communicator made from MPI_COMM_WORLD,
 * a shared-memory split, halo exchange with MPI_Sendrecv between target
 * regions that keep the field on the device, a non-blocking allreduce
 * overlapping a nowait target task, one-sided MPI_Put on a window over
 * MPI_COMM_WORLD, the Fortran handle of MPI_COMM_WORLD and back, and
 * MPI_Gather of every rank's result to rank 0, which checks it against the
 * serial answer.  Run with OMPC_WORKERS_PER_RANK (or on one rank).
 * argv[1]: no-finalize (return without MPI_Finalize), exit-last (the last
 * application rank calls exit(5) while the others wait for it),
 * return-last (the last application rank returns 0 from main without
 * MPI_Finalize while the others wait for it). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLOC 4096
#define STEPS 6

static double init_value(long g) { return (double)((g * 37) % 101) * 0.01; }

/* The serial answer: STEPS smoothing sweeps on a periodic ring of n points. */
static double serial_checksum(long n)
{
  double *u = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)n);
  for (long g = 0; g < n; g++)
    u[g] = init_value(g);
  for (int s = 0; s < STEPS; s++) {
    for (long g = 0; g < n; g++)
      v[g] = 0.25 * u[(g + n - 1) % n] + 0.5 * u[g] + 0.25 * u[(g + 1) % n];
    double *t = u;
    u = v;
    v = t;
  }
  double sum = 0.0;
  for (long g = 0; g < n; g++)
    sum += u[g] * (double)(g % 7 + 1);
  free(u);
  free(v);
  return sum;
}

int main(int argc, char **argv)
{
  int provided = -1, rank, size, fails = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return 2;
  if (provided < MPI_THREAD_FUNNELED) {
    printf("FAIL provided %d\n", provided);
    fails++;
  }
  int is_main = 0;
  MPI_Is_thread_main(&is_main);
  if (!is_main) {
    printf("FAIL MPI_Is_thread_main\n");
    fails++;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* The Fortran handle of MPI_COMM_WORLD names the same ranks. */
  MPI_Comm back = MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD));
  int fsize = -1;
  MPI_Comm_size(back, &fsize);
  if (fsize != size) {
    printf("FAIL rank %d: world through its Fortran handle has %d ranks, not %d\n", rank, fsize,
           size);
    fails++;
  }

  int dims[1] = {size}, periods[1] = {1}, left, right, crank;
  MPI_Comm ring;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Comm_rank(ring, &crank);
  MPI_Cart_shift(ring, 0, 1, &left, &right);

  MPI_Comm node;
  int nsize = -1;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nsize);
  if (nsize != size) { /* one host: every application rank is on it */
    printf("FAIL rank %d: shared-memory split has %d ranks, not %d\n", rank, nsize, size);
    fails++;
  }

  /* u[0] and u[NLOC+1] are halos */
  double *u = malloc(sizeof(double) * (NLOC + 2)), *v = malloc(sizeof(double) * (NLOC + 2));
  long first = (long)crank * NLOC;
  for (int i = 1; i <= NLOC; i++)
    u[i] = init_value(first + i - 1);

#pragma omp target enter data map(to : u[0 : NLOC + 2]) map(alloc : v[0 : NLOC + 2])
  for (int s = 0; s < STEPS; s++) {
#pragma omp target update from(u[1 : 1])
#pragma omp target update from(u[NLOC : 1])
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 10, &u[NLOC + 1], 1, MPI_DOUBLE, right, 10, ring,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[NLOC], 1, MPI_DOUBLE, right, 11, &u[0], 1, MPI_DOUBLE, left, 11, ring,
                 MPI_STATUS_IGNORE);
#pragma omp target update to(u[0 : 1])
#pragma omp target update to(u[NLOC + 1 : 1])
#pragma omp target teams distribute parallel for map(present, alloc : u[0 : NLOC + 2], v[0 : NLOC + 2])
    for (int i = 1; i <= NLOC; i++)
      v[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
    double *t = u;
    u = v;
    v = t;
  }

  /* A non-blocking allreduce of the step count while a target task runs. */
  int steps_all = 0, mine = STEPS;
  MPI_Request req;
  MPI_Iallreduce(&mine, &steps_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
  double local = 0.0;
#pragma omp target teams distribute parallel for nowait depend(out : local)                      \
    map(present, alloc : u[0 : NLOC + 2]) map(tofrom : local) reduction(+ : local) firstprivate(first)
  for (int i = 1; i <= NLOC; i++)
    local += u[i] * (double)((first + i - 1) % 7 + 1);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
#pragma omp taskwait
  if (steps_all != STEPS * size) {
    printf("FAIL rank %d: Iallreduce %d, want %d\n", rank, steps_all, STEPS * size);
    fails++;
  }
#pragma omp target exit data map(delete : u[0 : NLOC + 2], v[0 : NLOC + 2])

  /* An application rank that gives up with exit(): the job must end. */
  if (argc > 1 && strcmp(argv[1], "exit-last") == 0 && rank == size - 1) {
    printf("rank %d exits with status 5\n", rank);
    fflush(stdout);
    exit(5);
  }
  /* The same with status 0: under plain MPI the launcher ends the job. */
  if (argc > 1 && strcmp(argv[1], "return-last") == 0 && rank == size - 1) {
    printf("rank %d returns 0 without MPI_Finalize\n", rank);
    return 0;
  }

  /* One-sided: every rank puts its partial sum into rank 0's window. */
  double *slots = NULL;
  MPI_Win win;
  MPI_Win_allocate(rank == 0 ? (MPI_Aint)(sizeof(double) * (size_t)size) : 0, sizeof(double),
                   MPI_INFO_NULL, MPI_COMM_WORLD, &slots, &win);
  MPI_Win_fence(0, win);
  MPI_Put(&local, 1, MPI_DOUBLE, 0, rank, 1, MPI_DOUBLE, win);
  MPI_Win_fence(0, win);

  double *all = rank == 0 ? malloc(sizeof(double) * (size_t)size) : NULL;
  MPI_Gather(&local, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int fails_all = 0;
  MPI_Reduce(&fails, &fails_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double sum = 0.0, put = 0.0;
    for (int r = 0; r < size; r++) {
      sum += all[r];
      put += slots[r];
    }
    double want = serial_checksum((long)size * NLOC);
    if (fabs(sum - want) > 1e-9 * fabs(want) || fabs(put - want) > 1e-9 * fabs(want)) {
      printf("FAIL checksum: gathered %.15g, put %.15g, serial %.15g\n", sum, put, want);
      fails_all++;
    }
    if (!fails_all)
      printf("PASS mpi_user: %d application ranks, checksum %.12g\n", size, sum);
    free(all);
  }
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
  MPI_Comm_free(&ring);
  free(u);
  free(v);
  int code = rank == 0 && fails_all ? 1 : 0;
  if (argc < 2 || strcmp(argv[1], "no-finalize") != 0)
    MPI_Finalize();
  return code;
}
