#!/usr/bin/env bash
# Install every Debian 12 package ompc needs.  Idempotent: installs only what
# is missing, and does nothing (not even apt-get update) when all is there.
set -euo pipefail

packages=(
  clang-19          # compiler for the runtime and for OpenMP offloading programs
  clang-tools-19    # clang-offload-packager, clang-linker-wrapper (offloading links)
  libomp-19-dev     # LLVM's OpenMP host runtime (libomp) that clang-19 links
  libclang-rt-19-dev # ThreadSanitizer/AddressSanitizer runtimes for clang-19
  mpich             # mpiexec.mpich (Hydra); see docs/architecture.md, "Why MPICH"
  libmpich-dev      # MPICH headers and mpicc.mpich
  libhwloc-dev      # node topology (cores per worker)
  libffi-dev        # calling device kernels with arbitrary signatures
  libjansson-dev    # ompc-sched: reading task graphs in JSON
  libpng-dev        # awave: writing its pictures
  cmake             # >= 3.25 (Debian 12 ships 3.25.1)
  make
  pkg-config
  python3-yaml      # taskbench-port/bench/ompc-bench: experiment files
  python3-matplotlib # taskbench-port/bench/ompc-bench: plots
  clang-format-19   # scripts/format.sh and the format_check test
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
