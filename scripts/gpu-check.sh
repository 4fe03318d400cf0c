#!/usr/bin/env bash
# On a GPU machine: build with the CUDA backend required, run the CUDA tests, then the whole
# suite. Usage: scripts/gpu-check.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-gpu}
if command -v nvidia-smi >/dev/null; then nvidia-smi; fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_WITH_CUDA=ON
cmake --build "$dir" -j "$(nproc)"
ctest --test-dir "$dir" -L cuda --output-on-failure
ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure --timeout 600
