#!/usr/bin/env bash
# expect_interrupt.sh LIMIT REGEX CMD...: starts CMD (mpiexec), waits for
# "failure_modes: ready" in its output, sends it SIGINT as a terminal's
# Ctrl-C would, and passes when it then exits non-zero within LIMIT
# seconds with output matching the extended REGEX and no supervisor line
# (an interrupted job is not news worth one line per rank).
#
# One outcome is retried, twice at most: Hydra's mpiexec exiting 0 with no
# report at all after forwarding the Ctrl-C.  A kernel trace of such runs
# (signal_generate/signal_deliver, sys_exit_group) shows every rank
# receiving the SIGINT and dying of it, and the proxy and mpiexec then
# exiting 0: the launcher lost the ranks' statuses.  It happens in about
# one run in ten when two jobs share the 2 CPUs of a CI machine.  A
# runtime that really let a rank survive or exit 0 after SIGINT fails
# every attempt.
set -u
limit=$1 regex=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "expect_interrupt: FAIL: $*"; exit 1; }

# One attempt; sets rc.
attempt() {
  "$@" >"$out" 2>&1 &
  local job=$! i
  for ((i = 0; i < limit * 10; i++)); do
    grep -q "failure_modes: ready" "$out" && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "failure_modes: ready" "$out" || { kill -KILL "$job" 2>/dev/null; fail "the job never got ready"; }
  kill -INT "$job"
  for ((i = 0; i < limit * 10; i++)); do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$job" 2>/dev/null; then
    kill -KILL "$job" 2>/dev/null
    fail "the job hung after SIGINT (killed after ${limit}s)"
  fi
  wait "$job"
  rc=$?
}

for try in 1 2 3; do
  attempt "$@"
  [ "$rc" -eq 0 ] || break
  # Only the launcher's lost statuses are retried: it forwarded the
  # Ctrl-C and then said nothing about how the ranks ended.
  grep -q "Sending Ctrl-C" "$out" && ! grep -Eq -- "$regex|TERMINATION|fatal" "$out" ||
    fail "the job exited 0 after SIGINT"
  [ "$try" -lt 3 ] || fail "the job exited 0 after SIGINT (3 attempts)"
  echo "expect_interrupt: attempt $try: mpiexec exited 0 without a report after" \
       "forwarding the Ctrl-C (Hydra lost the ranks' statuses); once more"
done
grep -Eq -- "$regex" "$out" || fail "exit $rc but the output lacks /$regex/"
if grep -q "was killed by signal" "$out"; then
  fail "a supervisor reported a rank killed by the interrupt"
fi
cat "$out"
echo "expect_interrupt: ok (exit $rc)"
