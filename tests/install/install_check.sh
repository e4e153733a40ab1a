#!/usr/bin/env bash
# install_check.sh MODE BUILD_DIR EXAMPLE_DIR CMAKE MPIEXEC SANITIZER GCC GXX TESTS
#
# Installs BUILD_DIR into a temporary prefix, moves the installed tree to
# another directory, then, by MODE:
#   find_package:np3  every installed program finds the moved library; the
#                     moved ompcc builds a program that loads the moved
#                     library; EXAMPLE_DIR (find_package(ompc)) configures,
#                     builds and runs on 3 ranks: workers=2, result=ok.
#                     The moved ompc++ builds a C++ program, and C++ and
#                     C + C++ projects (sources from TESTS/offload/cxx)
#                     configure with find_package(ompc) before and after
#                     project(), build and pass on 3 ranks.
#   wrong_compiler    EXAMPLE_DIR configured with GCC (not clang 19) stops
#                     with ompc's message (skipped if GCC is empty); so do
#                     C++ and C + C++ projects configured with GXX, naming
#                     it, in both orders.
# Exit 77 (CTest: skipped) in sanitizer builds.
set -euo pipefail
mode=$1 build=$2 example=$3 cmake=$4 mpiexec=$5 sanitizer=$6 gcc=${7:-} gxx=${8:-}
tests=${9:-}
cxxsrc=$tests/offload/cxx

skip() { echo "SKIPPED: $*"; exit 77; }
# says LOG ERE: CMake's message in LOG, its wrapped lines joined, matches ERE.
says() { tr '\n' ' ' < "$1" | tr -s ' ' | grep -Eq "$2"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

[ "$sanitizer" = none ] ||
  skip "$sanitizer build: its libomptarget needs the sanitizer runtime" \
       "preloaded into every program, so the installed tree is not a usable ompc"
[ "$mode" != wrong_compiler ] || [ -n "$gcc" ] || skip "no gcc to configure with"
[ "$mode" != wrong_compiler ] || [ -n "$gxx" ] || skip "no g++ to configure with"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ompc-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The user's environment must not choose the example's compiler for it.
unset CC CXX CFLAGS CXXFLAGS LDFLAGS LD_LIBRARY_PATH

echo "== cmake --install $build --prefix $tmp/tmp1"
"$cmake" --install "$build" --prefix "$tmp/tmp1" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
mkdir "$tmp/moved"
mv "$tmp/tmp1" "$tmp/moved/prefix"
p=$tmp/moved/prefix
echo "== moved to $p"
p=$(realpath "$p")
for f in bin/ompcc bin/ompc++ lib/libomptarget.so.19.1 lib/libomptarget.so include/ompc.h \
         lib/cmake/ompc/ompcConfig.cmake lib/cmake/ompc/ompcConfigVersion.cmake \
         bin/ompc-config bin/ompc-sched bin/tb-deps bin/ompc-taskbench \
         bin/omp-taskbench bin/mpi-taskbench; do
  [ -e "$p/$f" ] || fail "$f is not installed"
done
[ -L "$p/lib/libomptarget.so" ] || fail "lib/libomptarget.so is not a symlink"
# The compilers ompc was built with, as its package names them.
config=$p/lib/cmake/ompc/ompcConfig.cmake
clang=$(sed -n 's/^set(ompc_CLANG "\(.*\)")$/\1/p' "$config")
clangxx=$(sed -n 's/^set(ompc_CLANGXX "\(.*\)")$/\1/p' "$config")
[ -x "$clang" ] && [ -x "$clangxx" ] ||
  fail "ompcConfig.cmake names no usable compilers: '$clang', '$clangxx'"

# cxx_project DIR ORDER LANGS: a CMake project in DIR that uses ompc from
# C++ (LANGS "CXX": multi_main.cpp + multi_lib.cpp, with
# ompc_add_executable) or from C and C++ (LANGS "C CXX": mixed_main.cpp +
# mixed_kernels.c, with add_executable + ompc::offload); ORDER early puts
# find_package(ompc) before project(), late after it.
cxx_project() {
  local dir=$1 order=$2 langs=$3 fp="find_package(ompc 0.1 REQUIRED)"
  mkdir -p "$dir"
  {
    echo "cmake_minimum_required(VERSION 3.25)"
    [ "$order" = early ] && echo "$fp"
    echo "project(ompc_cxx_$order LANGUAGES $langs)"
    [ "$order" = late ] && echo "$fp"
    if [ "$langs" = CXX ]; then
      echo "ompc_add_executable(app $cxxsrc/multi_main.cpp $cxxsrc/multi_lib.cpp)"
    else
      echo "add_executable(app $cxxsrc/mixed_main.cpp $cxxsrc/mixed_kernels.c)"
      echo "target_link_libraries(app PRIVATE ompc::offload)"
    fi
    echo "target_include_directories(app PRIVATE $tests/offload/conformance)"
    echo "target_compile_options(app PRIVATE -O1 -Wall -Wextra -Werror)"
  } > "$dir/CMakeLists.txt"
}

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
  gxx_re=$(sed 's/[][\.*^$+?(){}|]/\\&/g' <<< "$gxx")
  # C++ and C + C++ projects with g++ as the C++ compiler: the message is
  # about the C++ compiler and names g++ (never the C compiler, which is
  # clang 19 here or not enabled at all).
  for langs in CXX "C CXX"; do
    for order in early late; do
      d=$tmp/wrong-${langs// /-}-$order
      cxx_project "$d" "$order" "$langs"
      echo "== configure a $langs project (find_package $order) with CXX=$gxx"
      if CC="$clang" CXX="$gxx" "$cmake" -S "$d" -B "$d/build" \
           -DCMAKE_PREFIX_PATH="$p" > "$d.log" 2>&1; then
        cat "$d.log"; fail "configuring a $langs project with $gxx succeeded"
      fi
      says "$d.log" "ompc needs clang\+\+ 19 as the C\+\+ compiler .* CMAKE_CXX_COMPILER is $gxx_re \(GNU" ||
        { cat "$d.log"; fail "no message naming $gxx ($langs, $order)"; }
      ! grep -q "as the C compiler" "$d.log" ||
        { cat "$d.log"; fail "a message about the C compiler ($langs, $order)"; }
    done
  done
  cat "$d.log"
  echo "PASSED: configuring with gcc or g++ stops with ompc's message"
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
  # The benchmarks' baselines (ompc_stock_bench, every one named
  # *-bench-stock): LLVM's stock libomptarget, through LD_LIBRARY_PATH set
  # by their ompc-*-bench scripts.
  case "$(basename "$f")" in
    *-bench-stock) continue ;;
  esac
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

check_pass() {  # check_pass LABEL PROGRAM TOPIC: 3 ranks, PASS TOPIC
  local out
  echo "== $1: $mpiexec -n 3 $2"
  out=$(timeout 120 "$mpiexec" -n 3 "$2" 2>&1) || { echo "$out"; fail "$1 exited non-zero"; }
  echo "$out"
  grep -q "^PASS $3\$" <<< "$out" || fail "$1: expected PASS $3"
}

echo "== moved ompc++"
"$p/bin/ompc++" -O1 -I"$tests/offload/conformance" -o "$tmp/multi-ompcxx" \
  "$cxxsrc/multi_main.cpp" "$cxxsrc/multi_lib.cpp"
rpath_is "$tmp/multi-ompcxx" "$p/lib"
check_pass "ompc++ build" "$tmp/multi-ompcxx" multi_tu

# C++ and C + C++ projects, find_package(ompc) before and after project().
# Before: ompc picks clang-19 and clang++-19, and a C++-only project does
# not care what CC says.  After: the user chose them.
for langs in CXX "C CXX"; do
  for order in early late; do
    d=$tmp/proj-${langs// /-}-$order
    cxx_project "$d" "$order" "$langs"
    echo "== find_package(ompc) $order, LANGUAGES $langs: configure and build"
    if [ "$order" = early ]; then
      envs=()
      [ "$langs" = CXX ] && envs=(CC=/nonexistent/cc)
    else
      envs=(CC="$clang" CXX="$clangxx")
    fi
    env "${envs[@]}" "$cmake" -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$p" \
      > "$d.log" 2>&1 || { cat "$d.log"; fail "configuring the $langs project ($order)"; }
    grep -q "The CXX compiler identification is Clang 19" "$d.log" ||
      { cat "$d.log"; fail "the $langs project ($order) is not built by clang++ 19"; }
    "$cmake" --build "$d/build" > "$d.build.log" 2>&1 ||
      { cat "$d.build.log"; fail "building the $langs project ($order)"; }
    rpath_is "$d/build/app" "$p/lib"
    if [ "$langs" = CXX ]; then topic=multi_tu; else topic=mixed_c_cxx; fi
    check_pass "$langs project ($order)" "$d/build/app" "$topic"
  done
done

# ompc_add_executable refuses a C++ source in a project without CXX
# (CMake alone would leave it out of the build without a word).
mkdir "$tmp/nocxx"
cat > "$tmp/nocxx/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
find_package(ompc REQUIRED)
project(nocxx LANGUAGES C)
ompc_add_executable(app $cxxsrc/mixed_main.cpp $cxxsrc/mixed_kernels.c)
CMAKE
if "$cmake" -S "$tmp/nocxx" -B "$tmp/nocxx/build" -DCMAKE_PREFIX_PATH="$p" \
     > "$tmp/nocxx.log" 2>&1; then
  cat "$tmp/nocxx.log"; fail "a C++ source in a C project was accepted"
fi
says "$tmp/nocxx.log" "mixed_main.cpp is CXX but the project does not enable CXX" ||
  { cat "$tmp/nocxx.log"; fail "no message about the C++ source"; }
# A program linked through ompc::offload that calls MPI_Init is refused by
# name on several ranks without OMPC_WORKERS_PER_RANK (ompc::offload puts
# libomptarget ahead of the MPI library, so ompc sees the call).
mkdir "$tmp/mpi"
printf '%s\n' '#include <mpi.h>' 'int main(int c, char **v) { MPI_Init(&c, &v);' \
  '#pragma omp target' '{ }' 'return 0; }' > "$tmp/mpi/m.c"
printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'find_package(ompc REQUIRED)' \
  'project(m LANGUAGES C)' 'find_package(MPI REQUIRED COMPONENTS C)' \
  'ompc_add_executable(m m.c)' 'target_link_libraries(m PRIVATE MPI::MPI_C)' \
  > "$tmp/mpi/CMakeLists.txt"
"$cmake" -S "$tmp/mpi" -B "$tmp/mpi/b" -DCMAKE_PREFIX_PATH="$p" \
  -DMPI_C_COMPILER="$(command -v mpicc.mpich || echo mpicc)" > "$tmp/mpi.log" 2>&1 &&
  "$cmake" --build "$tmp/mpi/b" >> "$tmp/mpi.log" 2>&1 ||
  { cat "$tmp/mpi.log"; fail "building the MPI_Init program with ompc::offload"; }
out=$(timeout 60 "$mpiexec" -n 3 "$tmp/mpi/b/m" 2>&1) && fail "the MPI_Init program exited 0"
grep -q "the program calls MPI_Init, but OMPC_WORKERS_PER_RANK is not set" <<< "$out" ||
  { echo "$out"; fail "ompc::offload: MPI_Init was not refused by name"; }
echo "ok: ompc::offload program calling MPI_Init refused by name"
# ... and runs once each application rank gets its workers.
out=$(OMPC_WORKERS_PER_RANK=1 timeout 60 "$mpiexec" -n 4 "$tmp/mpi/b/m" 2>&1) ||
  { echo "$out"; fail "ompc::offload: the MPI_Init program failed with OMPC_WORKERS_PER_RANK=1"; }
echo "ok: ompc::offload program calling MPI_Init runs on 2 application ranks x 1 worker"
echo "PASSED: installed, moved, used through ompcc, ompc++ and find_package(ompc)"
