#!/usr/bin/env bash
# install_check.sh MODE BUILD_DIR EXAMPLE_DIR CMAKE MPIEXEC SANITIZER GCC
#
# Installs BUILD_DIR into a temporary prefix, moves the installed tree to
# another directory, then, by MODE:
#   find_package:np3  every installed program finds the moved library; the
#                     moved ompcc builds a program that loads the moved
#                     library; EXAMPLE_DIR (find_package(ompc)) configures,
#                     builds and runs on 3 ranks: workers=2, result=ok.
#   wrong_compiler    EXAMPLE_DIR configured with GCC (not clang 19) stops
#                     with ompc's message (skipped if GCC is empty).
# Exit 77 (CTest: skipped) in sanitizer builds.
set -euo pipefail
mode=$1 build=$2 example=$3 cmake=$4 mpiexec=$5 sanitizer=$6 gcc=${7:-}

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }

[ "$sanitizer" = none ] ||
  skip "$sanitizer build: its libomptarget needs the sanitizer runtime" \
       "preloaded into every program, so the installed tree is not a usable ompc"
[ "$mode" != wrong_compiler ] || [ -n "$gcc" ] || skip "no gcc to configure with"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ompc-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The user's environment must not choose the example's compiler for it.
unset CC CFLAGS LDFLAGS LD_LIBRARY_PATH

echo "== cmake --install $build --prefix $tmp/tmp1"
"$cmake" --install "$build" --prefix "$tmp/tmp1" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
mkdir "$tmp/moved"
mv "$tmp/tmp1" "$tmp/moved/prefix"
p=$tmp/moved/prefix
echo "== moved to $p"
p=$(realpath "$p")
for f in bin/ompcc lib/libomptarget.so.19.1 lib/libomptarget.so include/ompc.h \
         lib/cmake/ompc/ompcConfig.cmake lib/cmake/ompc/ompcConfigVersion.cmake \
         bin/ompc-config bin/ompc-sched bin/tb-deps bin/ompc-taskbench \
         bin/omp-taskbench bin/mpi-taskbench; do
  [ -e "$p/$f" ] || fail "$f is not installed"
done
[ -L "$p/lib/libomptarget.so" ] || fail "lib/libomptarget.so is not a symlink"

if [ "$mode" = wrong_compiler ]; then
  echo "== configure $example with CC=$gcc"
  if CC="$gcc" "$cmake" -S "$example" -B "$tmp/ex-gcc" -DCMAKE_PREFIX_PATH="$p" \
       > "$tmp/gcc.log" 2>&1; then
    cat "$tmp/gcc.log"; fail "configuring with $gcc succeeded"
  fi
  grep -q "ompc needs clang 19 as the C compiler" "$tmp/gcc.log" ||
    { cat "$tmp/gcc.log"; fail "no clear message about the compiler"; }
  # The usual order too: project() first, find_package(ompc) after.
  mkdir "$tmp/late"
  cat > "$tmp/late/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(late LANGUAGES C)
find_package(ompc REQUIRED)
CMAKE
  if CC="$gcc" "$cmake" -S "$tmp/late" -B "$tmp/late-build" -DCMAKE_PREFIX_PATH="$p" \
       > "$tmp/late.log" 2>&1; then
    cat "$tmp/late.log"; fail "configuring with $gcc (project() first) succeeded"
  fi
  grep -q "ompc needs clang 19 as the C compiler" "$tmp/late.log" ||
    { cat "$tmp/late.log"; fail "no clear message about the compiler (project() first)"; }
  cat "$tmp/late.log"
  echo "PASSED: configuring with gcc stops with ompc's message"
  exit 0
fi

loaded_from() {  # loaded_from LDD_LINE: the file it resolves to, normalised
  local path
  path=$(sed -n 's/.*=> \(.*\) (0x[0-9a-f]*)$/\1/p' <<< "$1")
  [ -n "$path" ] && realpath "$path"
}

# Every installed program and library that needs libomptarget loads the
# moved one (never the build tree's, never the vanished tmp1).
for f in "$p"/bin/* "$p"/lib/*.so*; do
  head -c 4 "$f" | grep -q ELF || continue
  # The benchmarks' baselines: LLVM's stock libomptarget, through
  # LD_LIBRARY_PATH set by ompc-tgt-bench and ompc-stream-bench.
  case "$(basename "$f")" in tgt-bench-stock|stream-bench-stock) continue ;; esac
  line=$(ldd "$f" | grep 'libomptarget\.so' || true)
  [ -z "$line" ] && continue
  [ "$(loaded_from "$line")" = "$p/lib/libomptarget.so.19.1" ] ||
    fail "$(basename "$f") loads the wrong libomptarget: $line"
  echo "ok: $(basename "$f") loads the moved libomptarget"
done
"$p/bin/ompc-config" > /dev/null 2>&1 || fail "moved ompc-config does not run"

check_run() {  # check_run LABEL PROGRAM: 3 ranks, workers=2, result=ok
  local out
  echo "== $1: $mpiexec -n 3 $2"
  out=$(timeout 120 "$mpiexec" -n 3 "$2" 2>&1) || { echo "$out"; fail "$1 exited non-zero"; }
  echo "$out"
  grep -q "workers=2" <<< "$out" || fail "$1: expected workers=2"
  grep -q "result=ok" <<< "$out" || fail "$1: expected result=ok"
  grep -q "ompc [0-9][0-9.]*: rank 0," <<< "$out" || fail "$1: no version line"
}
rpath_is() {  # rpath_is PROGRAM DIR: the RPATH (not RUNPATH) starts with DIR
  local rp
  rp=$(readelf -d "$1" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')
  case "$rp" in
    "$2"|"$2":*) ;;
    *) readelf -d "$1" | grep -i path >&2 || true
       fail "$(basename "$1"): RPATH '$rp' does not start with $2" ;;
  esac
}

echo "== moved ompcc"
"$p/bin/ompcc" -O2 -o "$tmp/pipeline-ompcc" "$example/pipeline.c"
rpath_is "$tmp/pipeline-ompcc" "$p/lib"
check_run "ompcc build" "$tmp/pipeline-ompcc"

echo "== find_package(ompc): configure and build $example"
"$cmake" -S "$example" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$p" > "$tmp/ex.log" 2>&1 ||
  { cat "$tmp/ex.log"; fail "configuring the example"; }
grep -q "The C compiler identification is Clang 19" "$tmp/ex.log" ||
  { cat "$tmp/ex.log"; fail "the example is not built by clang 19"; }
"$cmake" --build "$tmp/ex" > "$tmp/exb.log" 2>&1 ||
  { cat "$tmp/exb.log"; fail "building the example"; }
rpath_is "$tmp/ex/pipeline" "$p/lib"
[ "$(loaded_from "$(ldd "$tmp/ex/pipeline" | grep 'libomptarget\.so')")" = \
  "$p/lib/libomptarget.so.19.1" ] ||
  { ldd "$tmp/ex/pipeline"; fail "the example does not load the moved library"; }
readelf -V "$tmp/ex/pipeline" | grep -q "OMPC_1.0" ||
  fail "the example does not record the OMPC_1.0 symbol version"
check_run "find_package build" "$tmp/ex/pipeline"
echo "PASSED: installed, moved, used through ompcc and find_package(ompc)"
