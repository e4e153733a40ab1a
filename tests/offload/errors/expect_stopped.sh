#!/usr/bin/env bash
# expect_stopped.sh LIMIT RUNS CMD... (CMD's last argument is appended
# with 0..RUNS-1, the step at which one rank stops itself): each run has
# one rank stop its process ("failure_modes: rank R (pid P) stops itself
# with signal 19"), as a hung rank would.  Passes when every run exits
# non-zero within LIMIT seconds and names the stopped rank: at least one
# "stopped responding" line names rank R and pid P, and none names
# another rank (a live rank accused is as wrong as a hang).
set -u
limit=$1 runs=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "expect_stopped: FAIL (run $at): $*"; exit 1; }
for ((at = 0; at < runs; at++)); do
  start=$(date +%s%N)
  timeout --kill-after=5 "$limit" "$@" "$at" >"$out" 2>&1
  rc=$?
  elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
  cat "$out"
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "the job hung (killed after ${limit}s)"
  [ "$rc" -ne 0 ] || fail "the job exited 0"
  victim=$(grep -Eo "failure_modes: rank [0-9]+ \(pid [0-9]+\) stops itself with signal 19" "$out")
  [ "$(printf '%s\n' "$victim" | grep -c .)" -eq 1 ] || fail "no single victim line"
  rank=$(printf '%s\n' "$victim" | sed -E 's/.*rank ([0-9]+) .*/\1/')
  pid=$(printf '%s\n' "$victim" | sed -E 's/.*\(pid ([0-9]+)\).*/\1/')
  grep -Eq "fatal: rank [0-9]+: rank $rank \((the coordinator, )?pid $pid on [^)]+\) stopped responding: no message for [0-9.]+ s while this rank waits for .+ \(OMPC_PEER_TIMEOUT=" "$out" \
    || fail "no line names rank $rank (pid $pid) as stopped"
  if grep -E "stopped responding" "$out" | grep -Evq ": rank $rank \((the coordinator, )?pid $pid "; then
    fail "a live rank was named as stopped"
  fi
  echo "expect_stopped: run $at ok (rank $rank stopped, named; ${elapsed} ms)"
done
echo "expect_stopped: ok ($runs runs)"
