#!/usr/bin/env bash
# Installs, from Debian's archive, whatever tandem needs that is missing. Idempotent: when every
# package is present it changes nothing and needs no network.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config git python3 clang-format
  libtorch-dev                          # real training (CPU build of libtorch 1.13)
  libgtest-dev libgmock-dev librapidcheck-dev   # tests
  libbenchmark-dev libjemalloc-dev libmimalloc-dev  # benchmarks and their baselines
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev
  coinor-libcbc-dev                     # the exact planner's integer programs
  chromium                              # browser tests of the HTML report
  pybind11-dev python3-dev python3-torch python3-pytest  # the Python module and its tests
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
