#!/usr/bin/env bash
# expect_ok.sh LIMIT REGEX CMD...: passes when CMD exits 0 within LIMIT
# seconds and its output (stdout+stderr) matches the extended REGEX.
set -u
limit=$1 regex=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout --kill-after=5 "$limit" "$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ]; then
  echo "expect_ok: FAIL: exit $rc (124/137: hung past ${limit}s)"
  exit 1
fi
if ! grep -Eq -- "$regex" "$out"; then
  echo "expect_ok: FAIL: the output lacks /$regex/"
  exit 1
fi
echo "expect_ok: ok"
