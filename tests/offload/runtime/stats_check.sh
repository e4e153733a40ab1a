#!/usr/bin/env bash
# stats_check.sh NP PROGRAM: run PROGRAM with OMPC_STATS=1 and check where
# its tasks ran: no byte moved worker to worker (a dependent chain stays on
# one worker) and every worker ran tasks (independent ones spread).
set -u
np=$1 prog=$2
out=$(OMPC_STATS=1 "$MPIEXEC" -n "$np" "$prog" 2>&1)
rc=$?
echo "$out" | grep '\[ompc stats\]'
[ "$rc" -eq 0 ] || { echo "$out" | tail -20; echo "stats_check: FAIL: exit $rc"; exit 1; }
echo "$out" | grep -q 'worker->worker 0 in 0 transfers' ||
  { echo "stats_check: FAIL: data moved between workers"; exit 1; }
busy=$(echo "$out" | grep -cE '\[ompc stats\] worker [0-9]+ .*: [1-9][0-9]* tasks')
[ "$busy" -eq $((np - 1)) ] ||
  { echo "stats_check: FAIL: $busy of $((np - 1)) workers ran tasks"; exit 1; }
echo "stats_check: ok"
