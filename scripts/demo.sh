#!/usr/bin/env bash
# Install dependencies, build ompc, and run the flagship demo: for now the
# event-system benchmark (raw MPI vs ompc events, printed as ratios) on
# 1 head + 1 worker.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
mpiexec.mpich -n 2 build/bin/ompc-ev-bench "$@"
