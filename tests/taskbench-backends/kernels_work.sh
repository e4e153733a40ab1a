#!/usr/bin/env bash
# kernels_work.sh MPIEXEC NPFLAG OMPC_TASKBENCH
#
# Kernels on workers do their work.  Task Bench's validation only sees a
# task's output records, not whether the kernel loop ran: clang-19's device
# compilation once deleted the busy_wait and compute_bound loops, and every
# ompc figure (METG included) came out of empty tasks without a test
# noticing.  Here the same binary runs each compute kernel twice: on the
# host (OMP_TARGET_OFFLOAD=disabled, one rank: the host fallback, same
# optimisation, not sanitizer-instrumented) and on one worker; the worker
# run's Task Bench time must be at least a quarter of the host run's CPU
# time spent in the loop (a kernel without its loop takes microseconds:
# orders of magnitude less).  The loop's CPU is the run's CPU minus that of
# the same run with one iteration: a sanitizer build's start-up alone costs
# more CPU than a short kernel loop (and a loop measured under 20 ms fails:
# the host fallback lost its loop too).  The host's CPU time, not its wall
# time: a loaded machine stretches the host run's wall time as much as it
# likes, and the worker run's wall time can only grow with the load, never
# fall below the loop's work.
set -euo pipefail
mpiexec=$1 npflag=$2 tb=$3
elapsed() { sed -n 's/^Elapsed Time \([0-9.e+-]*\) seconds$/\1/p'; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
# User + system seconds of one host run (OMP_TARGET_OFFLOAD=disabled).
host_cpu() {
  local cpu
  cpu=$( { TIMEFORMAT='%U %S'; time OMP_TARGET_OFFLOAD=disabled "$tb" "$@" \
          >"$out" 2>&1; } 2>&1 | awk '{ print $1 + $2 }')
  [ -n "$(elapsed <"$out")" ] || { cat "$out" >&2; echo "kernels_work: the host run failed" >&2; exit 1; }
  echo "$cpu"
}
for spec in "busy_wait 50000000" "compute_bound 12000000" "compute_bound2 24000000" \
            "load_imbalance 12000000"; do
  set -- $spec
  args=(-steps 3 -width 1 -type stencil_1d -kernel "$1" -iter "$2")
  full=$(host_cpu "${args[@]}")
  base=$(host_cpu -steps 3 -width 1 -type stencil_1d -kernel "$1" -iter 1)
  host=$(awk -v f="$full" -v b="$base" 'BEGIN { print (f > b) ? f - b : 0 }')
  dev=$("$mpiexec" "$npflag" 2 "$tb" "${args[@]}" | elapsed)
  ok=$(awk -v h="$host" -v d="$dev" 'BEGIN { print (h >= 0.02 && d >= 0.25 * h) ? 1 : 0 }')
  printf 'kernels_work: %-15s host %8.4f s of CPU, worker %8.4f s\n' "$1" "$host" "$dev"
  if [ "$ok" != 1 ] || [ -z "$host" ] || [ -z "$dev" ]; then
    echo "kernels_work: $1 on a worker took under a quarter of its host CPU" \
         "time: the device kernel did not run its loop" >&2
    status=1
  fi
done
exit $status
