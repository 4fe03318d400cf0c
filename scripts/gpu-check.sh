#!/usr/bin/env bash
# On a GPU machine: build with the CUDA backend required, run the CUDA tests, then the whole
# suite, then train two jobs side by side on the GPU under temporal, spatial, scrooge and
# nodegroup and print the throughput table (bench/colocate/two_resnets_cuda.toml), then set two
# zoo models' measured solo and side-by-side throughput against the simulator's
# (bench/sim/gpu_validation.py). Fails if a CUDA test skipped although nvidia-smi sees a GPU (a
# driver or runtime mismatch would otherwise pass silently).
# Usage: scripts/gpu-check.sh [build-dir]   (default: build-gpu, relative to the repository)
# A GPU machine that cannot reach Debian's archive gets the C++ libraries tandem builds against
# from .deps/: scripts/gpu-deps.sh downloads their Debian packages there on a machine that can,
# and this script unpacks them into a private prefix (never into /).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-gpu}

if compgen -G ".deps/*.deb" >/dev/null; then
  prefix=${TMPDIR:-/tmp}/tandem-deps
  for deb in .deps/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-check: C++ dependencies from .deps unpacked into $prefix"
fi

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
# A CUDA build of libtorch (python's torch, when it has CUDA) also brings the pool as libtorch's
# CUDA allocator and its tests; a CPU-only libtorch (Debian's) leaves them out.
torch_args=()
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path if torch.version.cuda else "")' \
  2>/dev/null || true)
if [[ -n "$torch_prefix" ]]; then
  echo "gpu-check: building against the CUDA libtorch of python's torch ($torch_prefix)"
  torch_args=(-DTANDEM_WITH_TORCH=ON -DCMAKE_PREFIX_PATH="$torch_prefix" -DTorch_DIR="$torch_prefix/Torch")
  if [[ $(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))') == 0 ]]; then
    echo "gpu-check: this torch uses the old libstdc++ ABI (_GLIBCXX_USE_CXX11_ABI=0); linking tandem against it may fail" >&2
  fi
else
  echo "gpu-check: python has no CUDA build of torch; the libtorch CUDA allocator tests are not built" >&2
fi
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_WITH_CUDA=ON "${torch_args[@]}"
# Keep going past the first error: time on a GPU machine is scarce, so report every one at once.
keep_going=()
if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then keep_going=(-- -k 0); fi
cmake --build "$dir" -j "$(nproc)" "${keep_going[@]}"
if [[ -n "$torch_prefix" && ! -x "$dir/tests/torch/tandem_cuda_allocator_test" ]]; then
  echo "gpu-check: a CUDA libtorch was found but the CUDA allocator test was not built; see the 'libtorch CUDA allocator' line of the cmake output" >&2
  exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
ctest --test-dir "$dir" --output-on-failure -R "Cuda|cuda" | tee "$log"
if ((gpu_seen)) && grep -q -i 'skipped' "$log"; then
  echo "gpu-check: nvidia-smi lists a GPU but CUDA tests skipped; see their reason with:" >&2
  echo "  ctest --test-dir $dir -R 'Cuda|cuda' -V" >&2
  exit 1
fi
ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure --timeout 600

# Two jobs side by side on the GPU under four policies: the throughput table (medians of 3
# interleaved rounds, ratios to temporal). Needs the CUDA libtorch build and a GPU.
if [[ -n "$torch_prefix" ]] && ((gpu_seen)); then
  WORKLOAD=bench/colocate/two_resnets_cuda.toml POLICIES="temporal spatial scrooge nodegroup" \
    bench/colocate/colocate.sh "$dir" "${GPU_CHECK_ROUNDS:-3}"
  # The simulator against this GPU (issue 22): two zoo models, solo, one after another and side
  # by side, measured and simulated on the closest spec.
  python3 bench/sim/gpu_validation.py "$dir" --rounds "${GPU_CHECK_ROUNDS:-3}"
else
  echo "gpu-check: no GPU or no CUDA libtorch; the two-job throughput table is not measured" >&2
fi
