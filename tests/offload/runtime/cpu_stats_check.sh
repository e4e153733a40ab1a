#!/usr/bin/env bash
# cpu_stats_check.sh NP PROGRAM: run PROGRAM (kernel-heavy) with
# OMPC_STATS=1; the head must print a CPU line for itself and for every
# worker, with CPU time above 0, whole context-switch counts, and on each
# worker kernels whose CPU time is above 0 and at most the rank's CPU.
set -u
np=$1 prog=$2
out=$(OMPC_STATS=1 "$MPIEXEC" -n "$np" "$prog" 2>&1)
rc=$?
echo "$out" | grep '\[ompc stats\] cpu'
fail() { echo "cpu_stats_check: FAIL: $*"; exit 1; }
[ "$rc" -eq 0 ] || { echo "$out" | tail -20; fail "exit $rc"; }
num='[0-9]+\.[0-9]+'
for ((r = 0; r < np; r++)); do
  role=worker
  [ "$r" -eq 0 ] && role=head
  line=$(echo "$out" | grep -E "^\[ompc stats\] cpu rank $r \($role\): user $num s, system $num s, context switches [0-9]+ voluntary [0-9]+ involuntary; kernels [0-9]+ in $num s \(CPU $num s\), runtime $num s; threads: main $num s, gate $num s, handler $num s, kernels $num s, dispatch $num s, other $num s$")
  [ -n "$line" ] || fail "no well-formed cpu line for rank $r ($role)"
  read -r user sys kn kcpu <<<"$(echo "$line" |
    sed -E "s/.*user ($num) s, system ($num) s,.*kernels ([0-9]+) in $num s \(CPU ($num) s\).*/\1 \2 \3 \4/")"
  awk -v u="$user" -v s="$sys" 'BEGIN { exit !(u + s > 0) }' || fail "rank $r: no CPU time"
  [ "$r" -eq 0 ] && continue
  [ "$kn" -gt 0 ] || fail "rank $r: ran no kernel"
  awk -v u="$user" -v s="$sys" -v k="$kcpu" 'BEGIN { exit !(k > 0 && k <= u + s) }' ||
    fail "rank $r: kernel CPU $kcpu s is not within (0, user $user + system $sys s]"
done
echo "cpu_stats_check: ok"
