#!/usr/bin/env bash
# How fast the simulator is at scale: the 100-job Salus-like trace (examples/paper/
# salus_trace_100.toml, thousands of iterations with arrivals) under several policies, each
# simulated REPEAT times pinned to one core; prints the median wall time per policy and the
# simulated makespan. Target: under 10 s per policy on one core.
#
#   bench/sim/trace_bench.sh [BUILD_DIR] [REPEAT]     (defaults: build, 3)
#   POLICIES="exclusive temporal scrooge" GPU=p100 bench/sim/trace_bench.sh build-rel 5
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
gpu=${GPU:-p100}
workload=${WORKLOAD:-examples/paper/salus_trace_100.toml}
read -r -a policies <<<"${POLICIES:-exclusive temporal spatial scrooge mps-um}"
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "trace_bench: $tandem not found; build first" >&2; exit 1; }
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c 0); fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-10s %12s %14s %10s %8s\n' policy "wall (med)" "makespan" iterations failed
for policy in "${policies[@]}"; do
  times=()
  for _ in $(seq 1 "$repeat"); do
    start=$EPOCHREALTIME
    "${pin[@]}" "$tandem" sim "$workload" --gpu "$gpu" --policy "$policy" \
      --json "$work/$policy.json" >/dev/null || [ $? -eq 3 ]
    end=$EPOCHREALTIME
    times+=("$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')")
  done
  median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  python3 - "$work/$policy.json" "$policy" "$median" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
iterations = sum(job["iterations"] for job in result["jobs"])
print(f"{sys.argv[2]:<10} {float(sys.argv[3]):>10.2f} s {result['makespan_s']:>12.0f} s "
      f"{iterations:>10} {result['failed_jobs']:>8}")
PY
done
