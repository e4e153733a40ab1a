#!/usr/bin/env bash
# perf_model.sh PROGRAM: OMPC_PERF_MODEL keeps learnt kernel costs across
# runs: the first run writes the file, the second loads and rewrites it.
set -eu
prog=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
model="$dir/model.tsv"
OMPC_PERF_MODEL="$model" "$MPIEXEC" -n 3 "$prog" >/dev/null
grep -q '^# ompc perf model 1' "$model" || { echo "perf_model: FAIL: no header"; exit 1; }
n1=$(grep -c '^__omp_offloading_' "$model" || true)
[ "$n1" -ge 1 ] || { echo "perf_model: FAIL: no kernel lines"; cat "$model"; exit 1; }
runs1=$(awk -F'\t' '/^__omp_offloading_/ {s += $4} END {print s}' "$model")
OMPC_PERF_MODEL="$model" "$MPIEXEC" -n 3 "$prog" >/dev/null
runs2=$(awk -F'\t' '/^__omp_offloading_/ {s += $4} END {print s}' "$model")
# Loaded counts are kept (capped per executor), so the second file holds at
# least as many runs as the first.
[ "$runs2" -ge "$runs1" ] || { echo "perf_model: FAIL: $runs2 < $runs1 runs after reload"; exit 1; }
echo "not a model" > "$model.bad"
OMPC_PERF_MODEL="$model.bad" "$MPIEXEC" -n 2 "$prog" >/dev/null 2>"$dir/err" || true
grep -q "malformed line" "$dir/err" || { echo "perf_model: FAIL: a malformed file is not reported"; cat "$dir/err"; exit 1; }
echo "perf_model: ok ($n1 kernels, $runs1 then $runs2 runs)"
