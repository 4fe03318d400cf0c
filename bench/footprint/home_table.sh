#!/usr/bin/env bash
# HOME Table 2's analogue, simulated on an RTX 2080 Ti (11 GB) at CIFAR sizes: for each model,
# the largest batch one job trains at alone and its throughput there, per planner (none, the
# greedy baselines, TENSILE, HOME's swarm, tandem's search, the exact planner), every figure
# from this run; then each planner's search time and gap to `optimal` at 60% of the vanilla
# peak (tandem_planner_gap, search times the median of REPEAT runs).
#
#   bench/footprint/home_table.sh [BUILD_DIR] [REPEAT]     (default: build 3)
#
# Planner settings (spec NAME:KEY=VALUE; make_planner): HOME_SPEC and OPTIMAL_SPEC below cut
# HOME's 500x500 swarm and CBC's 60 s so that a maxbatch search (a dozen plans) ends in
# minutes on 2 cores; the gap table uses GAP_HOME_SPEC and GAP_OPTIMAL_SPEC.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
tandem=$build/src/tandem
gap=$build/bench/footprint/tandem_planner_gap
for binary in "$tandem" "$gap"; do
  [ -x "$binary" ] || { echo "home_table.sh: $binary not found; build tandem and tandem_planner_gap" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

HOME_SPEC=${HOME_SPEC:-home:iterations=10,particles=10,time_limit=5}
OPTIMAL_SPEC=${OPTIMAL_SPEC:-optimal:time_limit=5}
GAP_HOME_SPEC=${GAP_HOME_SPEC:-home:iterations=20,particles=20}
GAP_OPTIMAL_SPEC=${GAP_OPTIMAL_SPEC:-optimal:time_limit=60}
planners="none capuchin checkpoint tensile $HOME_SPEC tandem $OPTIMAL_SPEC"
models=${MODELS:-"mobilenetv2_cifar plain20_cifar squeezenet_cifar vgg16_cifar resnet50_cifar inception_v3_299"}

search_model() {
  local model=$1 i=0
  for planner in $planners; do
    i=$((i + 1))
    "$tandem" maxbatch "bench/footprint/$model.toml" --sim --gpu 2080ti --jobs 1 \
      --policy exclusive --planner "$planner" --json "$work/$model.$i.json" \
      >"$work/$model.$i.txt" 2>"$work/$model.$i.log" ||
      echo "home_table.sh: $model under $planner failed; see its log" >&2
  done
}

printf '%s\n' $models | xargs -P 2 -I{} bash -c "$(declare -f search_model); \
  tandem='$tandem' work='$work' planners='$planners' search_model {}"

echo "Largest batch and samples/s at it (tandem maxbatch --sim --gpu 2080ti --jobs 1):"
python3 - "$work" "$planners" "$models" <<'PY'
import json, os, sys
work, planners, models = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
names = [p.split(":")[0] for p in planners]
def load(model, i):
    path = os.path.join(work, f"{model}.{i}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        solo = json.load(f)["solo"]
    return (solo["max_batch"], solo["samples_per_s"]) if solo["max_batch"] else None
print("| model | " + " | ".join(names) + " |")
print("| --- |" + " --- |" * len(names))
ratios = {n: [] for n in names}
for model in models:
    cells, base = [], load(model, 1)
    for i, name in enumerate(names, start=1):
        got = load(model, i)
        if got is None:
            cells.append("failed")
            continue
        cells.append(f"{got[0]} ({got[1]:.0f}/s)")
        if base:
            ratios[name].append((got[0] / base[0], model))
    print(f"| {model} | " + " | ".join(cells) + " |")
cap = {m: r for r, m in ratios["capuchin"]}
print()
for name in names:
    if not ratios[name]:
        continue
    vs_none = sum(r for r, _ in ratios[name]) / len(ratios[name])
    vs_cap = [r / cap[m] for r, m in ratios[name] if m in cap]
    print(f"{name}: {vs_none:.2f}x vanilla's batch on average"
          + (f", {sum(vs_cap) / len(vs_cap):.2f}x capuchin's" if vs_cap else ""))
PY

echo
echo "Search time and gap to optimal at 60% of the vanilla peak (tandem_planner_gap):"
"$gap" --gpu 2080ti --budget 0.6 --repeat "$repeat" \
  --planners "capuchin;checkpoint;tensile;$GAP_HOME_SPEC;tandem;$GAP_OPTIMAL_SPEC" \
  ${GAP_MODELS:-mobilenetv2:1024 plain20:1024 squeezenet:4096 vgg16:1024 resnet50:512 inception_v3:64}
