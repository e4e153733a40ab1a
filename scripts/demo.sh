#!/usr/bin/env bash
# Install dependencies, build ompc, and run the flagship demo: for now the
# event-system benchmark (raw MPI vs ompc events) and the offloading
# benchmark (ompc vs LLVM's libomptarget), each printed as ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
mpiexec.mpich -n 2 build/bin/ompc-ev-bench "$@"
build/bin/ompc-tgt-bench
