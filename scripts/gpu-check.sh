#!/usr/bin/env bash
# On a GPU machine: build with the CUDA backend required, run the CUDA tests, then the whole
# suite. Fails if a CUDA test skipped although nvidia-smi sees a GPU (a driver or runtime
# mismatch would otherwise pass silently).
# Usage: scripts/gpu-check.sh [build-dir]   (default: build-gpu, relative to the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-gpu}

gpu_seen=0
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi || true
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then gpu_seen=1; fi
else
  echo "gpu-check: nvidia-smi not found; the CUDA tests will skip" >&2
fi

generator=()
if [[ ! -f "$dir/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_WITH_CUDA=ON
cmake --build "$dir" -j "$(nproc)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
ctest --test-dir "$dir" --output-on-failure -R "Cuda|cuda" | tee "$log"
if ((gpu_seen)) && grep -q -i 'skipped' "$log"; then
  echo "gpu-check: nvidia-smi lists a GPU but CUDA tests skipped; see their reason with:" >&2
  echo "  ctest --test-dir $dir -R 'Cuda|cuda' -V" >&2
  exit 1
fi
ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure --timeout 600
