#!/usr/bin/env bash
# compare_stock.sh MPIEXEC STOCK_LIBDIR NP_STOCK STOCK_PROGRAM NP PROGRAM BUSY [ARGS...]
#
# Runs an MPI program that offloads twice: built with stock clang and plain
# MPI, on NP_STOCK ranks with LLVM's own libomptarget (STOCK_LIBDIR); and
# built with ompcc, on NP ranks with OMPC_WORKERS_PER_RANK (from the
# environment) giving NP_STOCK application ranks.  Passes when both exit 0
# and print the same RESULT line, the ompc run (OMPC_INFO=1) started one
# runtime per application rank, and it placed target tasks on at least
# BUSY executors (of one application rank or another).
set -u
mpiexec=$1 stocklib=$2 np_stock=$3 stock=$4 np=$5 prog=$6 busy=$7
shift 7
fail() { echo "compare_stock: FAIL: $*"; exit 1; }
# The reference runs without libomp's hidden helper threads: with them,
# stock LLVM 19 now and then aborts a program whose target tasks are
# nowait (the assertion task_team != NULL in kmp_tasking.cpp), which is
# the reference's fault, not a difference in results.
out_stock=$(env -u LD_PRELOAD LD_LIBRARY_PATH="$stocklib" LIBOMP_USE_HIDDEN_HELPER_TASK=0 timeout 120 \
  "$mpiexec" -n "$np_stock" "$stock" "$@" 2>&1) || { echo "$out_stock"; fail "the stock run failed"; }
want=$(grep '^RESULT ' <<< "$out_stock") || { echo "$out_stock"; fail "no RESULT from the stock run"; }
out=$(OMPC_INFO=1 timeout 120 "$mpiexec" -n "$np" "$prog" "$@" 2>&1) ||
  { echo "$out" | tail -50; fail "the ompc run failed"; }
have=$(grep '^RESULT ' <<< "$out") || { echo "$out" | tail -50; fail "no RESULT from the ompc run"; }
echo "stock ($np_stock ranks): $want"
echo "ompc  ($np ranks, OMPC_WORKERS_PER_RANK=${OMPC_WORKERS_PER_RANK:-unset}): $have"
[ "$want" = "$have" ] || fail "the results differ"
! grep -E '\] (fatal|warn):' <<< "$out" || fail "the ompc run printed a warning or error"
used=$(grep -oE '^\[ompc info\] r0 task [0-9]+ \(.*\) -> executor [0-9]+ \(rank [0-9]+\)' <<< "$out" |
  sed -E 's/.*-> executor ([0-9]+) .*/\1/' | sort -u | wc -l)
[ "$used" -ge "$busy" ] || fail "target tasks ran on $used executor(s) of an application rank, expected at least $busy"
heads=$(grep -cE '^\[ompc info\] [0-9]+ rank\(s\): head rank 0' <<< "$out")
[ "$heads" -eq "$np_stock" ] || fail "$heads ompc runtimes started, expected $np_stock (one per application rank)"
echo "compare_stock: ok"
