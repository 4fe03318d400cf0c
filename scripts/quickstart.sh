#!/usr/bin/env bash
# From a fresh Debian machine: install what is missing, build, and run the main job on the CPU
# backend (no GPU needed): two real training jobs side by side under one memory budget.
# Extra arguments go to `tandem run` (e.g. --policy spatial --budget 512MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_BENCH=OFF
cmake --build build --target tandem
build/src/tandem run examples/two_jobs.toml --json build/results.json \
  --timeline build/timeline.csv "$@"
