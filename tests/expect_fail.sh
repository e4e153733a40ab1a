#!/usr/bin/env bash
# expect_fail.sh LIMIT REGEX CMD...: passes when CMD exits non-zero within
# LIMIT seconds and its output (stdout+stderr) matches the extended REGEX.
set -u
limit=$1 regex=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
timeout --kill-after=5 "$limit" "$@" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && [ "$elapsed" -ge "$limit" ]; then
  echo "expect_fail: FAIL: the job hung (killed after ${limit}s) instead of failing loudly"
  exit 1
fi
if [ "$rc" -eq 0 ]; then
  echo "expect_fail: FAIL: the job exited 0, expected a failure"
  exit 1
fi
if ! grep -Eq -- "$regex" "$out"; then
  echo "expect_fail: FAIL: exit $rc but the output lacks /$regex/"
  exit 1
fi
echo "expect_fail: ok (exit $rc after ${elapsed}s, message matched)"
