#!/usr/bin/env bash
# compare_stock.sh MPIEXEC STOCK_LIBDIR STOCK_PROGRAM NP PROGRAM COMBINED
#
# Runs a program that offloads twice: built with stock clang against
# LLVM's own libomptarget (STOCK_LIBDIR, one process), and built with
# ompcc on NP ranks (OMPC_SPLIT from the environment) with OMPC_STATS=1.
# Passes when both exit 0 and print the same RESULT line, and the ompc
# run combined a reduction across workers in exactly COMBINED kernels.
set -u
mpiexec=$1 stocklib=$2 stock=$3 np=$4 prog=$5 combined=$6
fail() { echo "compare_stock: FAIL: $*"; exit 1; }
out_stock=$(env -u LD_PRELOAD LD_LIBRARY_PATH="$stocklib" LIBOMP_USE_HIDDEN_HELPER_TASK=0 \
  timeout 120 "$stock" 2>&1) || { echo "$out_stock"; fail "the stock run failed"; }
want=$(grep '^RESULT ' <<< "$out_stock") || { echo "$out_stock"; fail "no RESULT from the stock run"; }
out=$(OMPC_STATS=1 timeout 120 "$mpiexec" -n "$np" "$prog" 2>&1) ||
  { echo "$out" | tail -50; fail "the ompc run failed"; }
have=$(grep '^RESULT ' <<< "$out") || { echo "$out" | tail -50; fail "no RESULT from the ompc run"; }
echo "stock: $want"
echo "ompc ($np ranks, OMPC_SPLIT=${OMPC_SPLIT:-unset}): $have"
grep '^\[ompc stats\] split' <<< "$out"
[ "$want" = "$have" ] || fail "the results differ"
! grep -E '\] (fatal|warn):' <<< "$out" || fail "the ompc run printed a warning or error"
got=$(grep -cE '^\[ompc stats\] split .* merged, [0-9]+ undone and run unsplit, [1-9][0-9]* with a reduction combined' <<< "$out")
[ "$got" -eq "$combined" ] || fail "$got kernel(s) combined a reduction across workers, expected $combined"
echo "compare_stock: ok"
