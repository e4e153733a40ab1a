#!/usr/bin/env bash
# expect_ok.sh REGEX CMD...: passes when CMD exits 0 and its output
# (stdout+stderr) matches the extended REGEX.
set -u
regex=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  tail -n 30 "$out"
  echo "expect_ok: FAIL: exit $rc"
  exit 1
fi
if ! grep -Eq -- "$regex" "$out"; then
  tail -n 30 "$out"
  echo "expect_ok: FAIL: the output lacks /$regex/"
  exit 1
fi
grep -E -- "$regex" "$out" | head -3
echo "expect_ok: ok"
