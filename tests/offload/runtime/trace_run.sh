#!/usr/bin/env bash
# trace_run.sh NP PROGRAM: run PROGRAM on NP ranks with OMPC_TRACE and check
# the trace it leaves.
set -eu
np=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
OMPC_TRACE="$dir/trace.json" "$MPIEXEC" -n "$np" "$prog"
python3 "$(dirname "$0")/check_trace.py" "$dir/trace.json" $((np - 1))
