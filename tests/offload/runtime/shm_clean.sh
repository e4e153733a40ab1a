#!/usr/bin/env bash
# shm_clean.sh MODE MPIEXEC NP PROGRAM [ARGS...]: runs the job with
# OMPC_INFO=1 (whose rank table names every rank's and supervisor's pid)
# and fails when a file libomp registers per process
# (/dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>) is left for any of them.
# MODE ok: the job must exit 0, and every pid of the table is checked;
# fail: it must fail, and the ranks that report a fatal error or death
# ("[ompc rN ...] fatal") are checked (the launcher kills the others with
# SIGKILL, which leaves no chance to clean up).  Files older than the job
# (an unrelated process that had the same pid) are not counted.
set -u
mode=$1 mpiexec=$2 np=$3
shift 3
marker=$(mktemp) out=$(mktemp)
trap 'rm -f "$marker" "$out"' EXIT
sleep 0.01 # a file created in the marker's clock tick must count as newer
OMPC_INFO=1 timeout --kill-after=5 100 "$mpiexec" -n "$np" "$@" >"$out" 2>&1
rc=$?
if { [ "$mode" = ok ] && [ "$rc" -ne 0 ]; } || { [ "$mode" = fail ] && [ "$rc" -eq 0 ]; }; then
  cat "$out"
  echo "shm_clean: FAIL: exit $rc, expected mode $mode"
  exit 1
fi
table=$(grep -m1 '\[ompc info\] ranks:' "$out")
if [ "$mode" = ok ]; then
  want=$np
  entries=$(echo "$table" | grep -oE '[0-9]+=pid [0-9]+@[^ ,]*( \(supervisor pid [0-9]+\))?')
else
  want=1
  entries=
  for r in $(sed -nE 's/^\[ompc r([0-9]+)( [^]]*)?\] fatal.*/\1/p' "$out" | sort -u); do
    entries="$entries $(echo "$table" | grep -oE "(^| )$r=pid [0-9]+@[^ ,]*( \(supervisor pid [0-9]+\))?")"
  done
fi
pids=$(echo "$entries" | grep -oE 'pid [0-9]+' | awk '{print $2}')
n=$(echo "$entries" | grep -oE '[0-9]+=pid' | grep -c .)
if [ "$n" -lt "$want" ]; then
  cat "$out"
  echo "shm_clean: FAIL: found $n ranks to check in the output, expected at least $want"
  exit 1
fi
left=0
for pid in $pids; do
  f=/dev/shm/__KMP_REGISTERED_LIB_${pid}_$(id -u)
  if [ -e "$f" ] && [ "$f" -nt "$marker" ]; then
    echo "shm_clean: FAIL: $f left behind"
    left=$((left + 1))
  fi
done
if [ "$left" -ne 0 ]; then
  grep -E "\[ompc info\] ranks:|fatal|signal" "$out"
  exit 1
fi
echo "shm_clean: ok (exit $rc, no libomp file of pids" $pids "left)"
