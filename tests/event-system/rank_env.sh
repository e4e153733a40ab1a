#!/usr/bin/env bash
# rank_env.sh RANK VAR=VALUE PROGRAM [ARGS...]: run PROGRAM with VAR=VALUE
# set on MPI rank RANK only (the launcher's rank variable: MPICH/Hydra and
# SLURM's PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK), without relying on a
# launcher's own syntax for per-rank environments.
set -eu
rank=$1 assign=$2
shift 2
me=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-}}}
if [ -z "$me" ]; then
  echo "rank_env.sh: no rank variable (PMI_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID) set by the launcher" >&2
  exit 2
fi
if [ "$me" = "$rank" ]; then
  export "${assign?}"
fi
exec "$@"
