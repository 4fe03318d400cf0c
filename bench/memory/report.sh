#!/usr/bin/env bash
# Runs the memory benchmarks (5 repetitions, medians) and prints, per workload, ns/op for every
# allocator, fragmentation where known, and each baseline's time over tandem's (> 1: tandem is
# faster). Takes about 1.5 minutes on 2 cores.
# Usage: bench/memory/report.sh [build-dir (default: build/ at the repository root)]
#        [extra benchmark flags, e.g. --benchmark_filter=trace/...]
# Leaves the raw JSON and the table next to the binary (report.json, report.txt).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:-$here/../../build}
shift || true
binary="$dir/bench/memory/tandem_memory_bench"
if [[ ! -x $binary ]]; then
  echo "report.sh: $binary not found; build it first:" >&2
  echo "  cmake -S $here/../.. -B $dir -G Ninja -DCMAKE_BUILD_TYPE=Release" >&2
  echo "  cmake --build $dir --target tandem_memory_bench" >&2
  exit 1
fi
python=/usr/bin/python3
[[ -x $python ]] || python=python3
json="$dir/bench/memory/report.json"
# min_time 0.1 s per run keeps the suite (90 benchmarks x 5 repetitions) near 1.5 minutes on 2
# cores. Random interleaving spreads each benchmark's repetitions over the whole run, so that
# a burst of load from elsewhere on a shared machine skews all allocators alike.
"$binary" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.1 --benchmark_enable_random_interleaving=true \
  --benchmark_format=json "$@" >"$json"
"$python" "$here/report_table.py" "$json" | tee "$dir/bench/memory/report.txt"
