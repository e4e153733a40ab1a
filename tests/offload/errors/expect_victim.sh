#!/usr/bin/env bash
# expect_victim.sh LIMIT SIGNUM SIGNAME REGEX CMD...: CMD runs a job in
# which one rank kills itself with signal SIGNUM, saying so first
# ("failure_modes: rank R (pid P) kills itself with signal SIGNUM").
# Passes when the job exits non-zero within LIMIT seconds and its output
#  - has exactly one supervisor line, which names that rank R, its pid P,
#    its role (head for rank 0) and the signal by number and SIGNAME;
#  - maps R to P and to the same launcher pid in OMPC_INFO's rank list,
#    when the output has one;
#  - matches the extended REGEX as well (empty: no further check).
set -u
limit=$1 signum=$2 signame=$3 regex=$4
shift 4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "expect_victim: FAIL: $*"; exit 1; }
# The run, its time limit (a hang fails), its non-zero exit and REGEX:
# expect_fail.sh, which prints the job's output.
"$(dirname "$0")/../../expect_fail.sh" "$limit" "${regex:-.}" "$@" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || exit 1
victim=$(grep -Eo "failure_modes: rank [0-9]+ \(pid [0-9]+\) kills itself with signal $signum\$" "$out")
[ "$(printf '%s\n' "$victim" | grep -c .)" -eq 1 ] || fail "no single victim line"
rank=$(printf '%s\n' "$victim" | sed -E 's/.*rank ([0-9]+) .*/\1/')
pid=$(printf '%s\n' "$victim" | sed -E 's/.*\(pid ([0-9]+)\).*/\1/')
role=worker
[ "$rank" -eq 0 ] && role=head
# An MPI program's ranks (OMPC_WORKERS_PER_RANK) have roles of their own.
role=${EXPECT_VICTIM_ROLE:-$role}
n=$(grep -c "was killed by signal" "$out")
[ "$n" -eq 1 ] || fail "$n supervisor lines, expected exactly one"
line=$(grep -E "^\[ompc r$rank\] fatal: rank $rank of [0-9]+ \($role; pid $pid on [^,]+, supervisor pid [0-9]+\) was killed by signal $signum \($signame\)" "$out") \
  || fail "the supervisor line does not name rank $rank ($role), pid $pid and signal $signum ($signame)"
sup=$(printf '%s\n' "$line" | sed -E 's/.*supervisor pid ([0-9]+)\).*/\1/')
if grep -q '^\[ompc info\] ranks: ' "$out"; then
  grep -Eq "^\[ompc info\] ranks: (.*, )?$rank=pid $pid@[^ ,]+ \(supervisor pid $sup\)" "$out" \
    || fail "OMPC_INFO's rank list does not map rank $rank to pid $pid (supervisor pid $sup)"
fi
echo "expect_victim: ok (rank $rank, pid $pid)"
