#!/usr/bin/env bash
# Downloads into .deps/ the Debian packages of the C++ libraries tandem builds against (headers,
# CMake configs, the few shared and static libraries), for a GPU machine that has CUDA, PyTorch
# and a compiler but no way to reach Debian's archive. scripts/gpu-check.sh unpacks them there.
# Run on a Debian 12 machine with network access; .deps/ is ignored by git.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
apt-get download libfmt-dev libfmt9 libcli11-dev libtomlplusplus-dev libtomlplusplus3 nlohmann-json3-dev \
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian \
  libmimalloc-dev libmimalloc2.0 libjemalloc-dev libjemalloc2
ls -1 ./*.deb
