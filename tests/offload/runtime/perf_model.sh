#!/usr/bin/env bash
# perf_model.sh PROGRAM: OMPC_PERF_MODEL keeps learnt kernel costs across
# runs: the first run writes the file, the second loads and rewrites it.
#
# What proves the load: HEFT holds back every task that depends on a
# kernel it has not measured yet (OMPC_STATS: "N held back until a
# kernel's cost was measured").  PROGRAM must be a chain of dependent
# kernels, so that the first run, learning from scratch, holds some back;
# the second, with every kernel's cost loaded, must hold none.  Counting
# runs in the file proves nothing: they are capped per executor, so a
# second run that loaded nothing writes the same counts.
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
model="$dir/model.tsv"
fail() { echo "perf_model: FAIL: $*"; exit 1; }

# held LOG: the number of tasks the run held back, from its OMPC_STATS.
held() {
  sed -n "s/^\[ompc stats\] policy heft: .*, \([0-9][0-9]*\) held back until a kernel's cost was measured$/\1/p" "$1"
}

OMPC_SCHEDULER=heft OMPC_STATS=1 OMPC_PERF_MODEL="$model" \
  "$MPIEXEC" -n 3 "$prog" >/dev/null 2>"$dir/run1" || { cat "$dir/run1"; fail "first run"; }
grep -q '^# ompc perf model 1' "$model" || fail "no header"
n1=$(grep -c '^__omp_offloading_' "$model" || true)
[ "$n1" -ge 1 ] || { cat "$model"; fail "no kernel lines"; }
held1=$(held "$dir/run1")
[ -n "$held1" ] || { cat "$dir/run1"; fail "no OMPC_STATS line of the heft policy"; }
[ "$held1" -ge 1 ] || fail "learning from scratch held nothing back: this program cannot show the load"
cp "$model" "$dir/model1.tsv"

OMPC_SCHEDULER=heft OMPC_STATS=1 OMPC_PERF_MODEL="$model" \
  "$MPIEXEC" -n 3 "$prog" >/dev/null 2>"$dir/run2" || { cat "$dir/run2"; fail "second run"; }
held2=$(held "$dir/run2")
[ "$held2" = 0 ] || {
  cat "$dir/model1.tsv"
  fail "the second run held $held2 tasks back (the first $held1): the saved costs were not loaded"
}
# Every kernel of the first file is still there, rewritten.
kernels() { awk -F'\t' '/^__omp_offloading_/ {print $1}' "$1" | sort -u; }
lost=$(comm -23 <(kernels "$dir/model1.tsv") <(kernels "$model"))
[ -z "$lost" ] || { cat "$model"; fail "kernels missing after the second run: $lost"; }

echo "not a model" > "$model.bad"
OMPC_PERF_MODEL="$model.bad" "$MPIEXEC" -n 2 "$prog" >/dev/null 2>"$dir/err" || true
grep -q "malformed line" "$dir/err" || { cat "$dir/err"; fail "a malformed file is not reported"; }
echo "perf_model: ok ($n1 kernels; held back: $held1 learning from scratch, 0 with the file loaded)"
