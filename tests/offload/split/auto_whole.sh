#!/usr/bin/env bash
# auto_whole.sh MPIEXEC -n NP PROGRAM auto: OMPC_SPLIT=auto with OMPC_INFO=1
# on split.c's auto mode.  Passes when the program exits 0, the first
# decision auto makes about the 64 MiB copy (auto_copy's kernel) is to run
# it whole, and no launch of it is split: the model must see at once that
# the moves, twins and first page faults cost more than the copy.
set -u
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
fail() {
  tail -n 30 "$out"
  echo "auto_whole: FAIL: $1"
  exit 1
}
[ "$rc" -eq 0 ] || fail "exit $rc"
copy='__omp_offloading_[0-9a-f]+_[0-9a-f]+_auto_copy_l[0-9]+'
first=$(grep -E "auto: kernel $copy " "$out" | head -n 1)
[ -n "$first" ] || fail "no decision about the copy kernel"
case $first in
  *" runs whole: "*) ;;
  *) fail "the first decision about the copy kernel was not to run it whole: $first" ;;
esac
splits=$(grep -cE "split $copy over " "$out")
[ "$splits" -eq 0 ] || fail "the copy kernel was split $splits time(s)"
echo "$first"
echo "auto_whole: ok"
