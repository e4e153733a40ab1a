#!/usr/bin/env bash
# check_isa.sh OBJDUMP OBJCOPY PACKAGER host|device PROGRAM
#
# The Task Bench kernels use the vector instructions they were built for
# (OMPC_TASKBENCH_ISA=auto or avx2: -mavx2 -mfma, taskbench-port/
# CMakeLists.txt): compute_bound's loop is 16 independent multiply-adds of
# 4 doubles, so PROGRAM's code (host) or the device image embedded in it
# (device: ompc-taskbench's .llvm.offloading section, unpacked with
# clang-offload-packager) must hold at least 16 vfmadd...pd on ymm
# registers.  Without the flags clang-19 emits SSE2 mulpd/addpd and none.
set -euo pipefail
objdump=$1 objcopy=$2 packager=$3 where=$4 prog=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$where" in
  host) code=$prog ;;
  device)
    "$objcopy" -O binary --only-section=.llvm.offloading "$prog" "$tmp/offload"
    if [ ! -s "$tmp/offload" ]; then
      echo "check_isa: FAIL: $prog has no .llvm.offloading section"; exit 1
    fi
    "$packager" "$tmp/offload" --image=file="$tmp/device.elf",triple=x86_64-pc-linux-gnu
    code=$tmp/device.elf ;;
  *) echo "check_isa: usage: OBJDUMP OBJCOPY PACKAGER host|device PROGRAM" >&2; exit 2 ;;
esac
n=$("$objdump" -d "$code" | grep -Ec 'vfmadd[0-9]+pd[[:space:]]+%ymm' || true)
echo "check_isa: $where code of $(basename "$prog"): $n vfmadd...pd on ymm"
if [ "$n" -lt 16 ]; then
  echo "check_isa: FAIL: fewer than compute_bound's 16 (built without -mavx2 -mfma?)"; exit 1
fi
echo "check_isa: ok"
