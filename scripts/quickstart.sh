#!/usr/bin/env bash
# From a fresh Debian machine: install what is missing, build, and run the main job on the CPU
# backend (no GPU needed). Extra arguments go to the job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_BUILD_BENCH=OFF
cmake --build build --target tandem
build/src/tandem pool-demo "$@"
