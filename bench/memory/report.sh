#!/usr/bin/env bash
# Runs the memory benchmarks (5 repetitions, medians) and prints ns/op per allocator, tandem's
# fragmentation, and each baseline's time as a multiple of tandem's (> 1: tandem is faster).
# Usage: bench/memory/report.sh [build-dir] [extra benchmark flags]
set -euo pipefail
dir=${1:-build}
shift || true
binary="$dir/bench/memory/tandem_memory_bench"
[ -x "$binary" ] || { echo "build $binary first (cmake --build $dir --target tandem_memory_bench)" >&2; exit 1; }
json=$(mktemp)
trap 'rm -f "$json"' EXIT
"$binary" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.1 --benchmark_format=json "$@" >"$json"
python3 - "$json" <<'PY'
import json, sys, re
runs = json.load(open(sys.argv[1]))["benchmarks"]
med = {}
for r in runs:
    if r.get("aggregate_name") != "median":
        continue
    name = r["run_name"]
    m = re.match(r"(\w+)/(\w+)(?:/(\d+))?(?:/real_time)?(?:/threads:(\d+))?", name)
    workload, alloc, arg, threads = m.group(1), m.group(2), m.group(3), m.group(4)
    key = workload + (f"/{int(arg) >> 10}KiB" if arg else "") + (f" x{threads} threads" if threads else "")
    med.setdefault(key, {})[alloc] = (1e9 / r["items_per_second"], r.get("fragmentation"))
allocs = ["tandem", "tandem_2MiB", "glibc", "jemalloc", "mimalloc", "first_fit"]
print(f"{'workload (ns/op, median of 5)':34}" + "".join(f"{a:>12}" for a in allocs) +
      "   frag(64M/2M)   glibc/t  jemalloc/t  mimalloc/t  firstfit/t")
for key in sorted(med, key=lambda k: (k.split('/')[0], len(k), k)):
    row = med[key]
    t = row["tandem"][0]
    frag = "/".join(f"{row[a][1]:.3f}" for a in ("tandem", "tandem_2MiB") if row.get(a) and row[a][1])
    ratios = "".join(f"{row[a][0] / t:>12.2f}" for a in ("glibc", "jemalloc", "mimalloc", "first_fit"))
    print(f"{key:34}" + "".join(f"{row[a][0]:>12.1f}" if a in row else f"{'-':>12}" for a in allocs) +
          f"   {frag:>12}" + ratios)
PY
