#!/usr/bin/env bash
# Builds tandem and runs every test: the full suite in a normal build, then the core
# (non-libtorch) tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrency
# tests under ThreadSanitizer. Also checks formatting. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
configure() {  # configure DIR [cmake args...]
  local dir=$1
  shift
  # Warnings are errors here (and so in CI), not in a user's plain build.
  cmake -S . -B "$dir" -G Ninja -DTANDEM_BUILD_BENCH=OFF -DTANDEM_WERROR=ON "$@" >/dev/null
}

echo "== format"
scripts/format.sh --check

echo "== build and test (Release, what most users build)"
configure build -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_BENCH=ON
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 300

echo "== core tests under AddressSanitizer + UndefinedBehaviorSanitizer"
configure build-asan -DCMAKE_BUILD_TYPE=Debug -DTANDEM_SANITIZE=address,undefined \
  -DTANDEM_EXPENSIVE_CHECKS=ON -DTANDEM_WITH_CUDA=OFF -DTANDEM_WITH_TORCH=OFF
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j "$jobs" -LE "cuda|torch" --output-on-failure --timeout 300

echo "== concurrency tests under ThreadSanitizer"
configure build-tsan -DCMAKE_BUILD_TYPE=Debug -DTANDEM_SANITIZE=thread -DTANDEM_WITH_CUDA=OFF -DTANDEM_WITH_TORCH=OFF
# Only the concurrency-labelled tests run here, so only they are built.
cmake --build build-tsan -j "$jobs" --target tandem_concurrency_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan -j "$jobs" -L concurrency --output-on-failure --timeout 600
