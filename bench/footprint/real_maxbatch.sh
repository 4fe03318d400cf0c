#!/usr/bin/env bash
# The largest batch one real job trains at alone under each footprint planner, against keeping
# every tensor (planner none), on the CPU backend: HOME Table 2's real analogue for the zoo.
# Each search is `tandem maxbatch W --planner P --jobs 1 --policy exclusive --iterations 7`: a
# planned probe is recorded under the budget in passive mode and fits when its last plan held by
# itself (a plan that needed passive swapping beside it is planned again for less from the next
# iteration, up to 3 times; README, "Largest co-located batch"). Searches run one after another
# (real training).
#
#   bench/footprint/real_maxbatch.sh [BUILD_DIR]
#
# Settings (environment): MODELS (zoo model:image side, or a model alone where it takes no
# images, e.g. "resnet20:16 lstm"; default "resnet20:16"), BUDGET (the
# device budget, default 40MiB), COPY (the copy engine's bandwidth: "memcpy", default, or "auto"
# for a V100's compute-to-copy ratio, which makes each probe minutes long here), PLANNERS.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "real_maxbatch.sh: $tandem not found; build tandem" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

MODELS=${MODELS:-"resnet20:16"}
BUDGET=${BUDGET:-40MiB}
COPY=${COPY:-memcpy}
PLANNERS=${PLANNERS:-"none checkpoint capuchin superneurons vdnn-conv tensile tandem home:iterations=10,particles=10,time_limit=5 optimal:time_limit=5"}

for spec in $MODELS; do
  model=${spec%%:*}
  side=${spec#*:}
  [ "$side" = "$spec" ] && side=""  # a model without images (lstm, bert_mini, mlp)
  workload="$work/$model.toml"
  cat >"$workload" <<EOF
[device]
kind = "cpu"
capacity = "2GiB"
budget = "$BUDGET"
region_size = "2MiB"
copy_bandwidth = "$COPY"

[policy]
name = "exclusive"

[[job]]
name = "$model"
model = "$model"
batch_size = 8
iterations = 4
threads = 1
EOF
  [ -z "$side" ] || printf '[job.model_options]\nimage_side = %s\n' "$side" >>"$workload"
  i=0
  for planner in $PLANNERS; do
    i=$((i + 1))
    # From batch 2: models with batch norm cannot train on one sample.
    args=(maxbatch "$workload" --jobs 1 --policy exclusive --iterations 7 --low 2
      --json "$work/$model.$i.json")
    [ "$planner" = none ] || args+=(--planner "$planner")
    started=$(date +%s)
    if ! "$tandem" "${args[@]}" >"$work/$model.$i.txt" 2>"$work/$model.$i.log"; then
      echo "real_maxbatch.sh: $model under $planner failed; its log:" >&2
      cat "$work/$model.$i.log" >&2
    fi
    echo "$model under $planner: $(($(date +%s) - started)) s" >&2
  done
done

echo "Largest batch alone and samples/s at it (tandem maxbatch, real, budget $BUDGET, copies $COPY):"
python3 - "$work" "$PLANNERS" "$MODELS" <<'PY'
import json, os, sys
work, planners, models = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
print("| model | planner | largest batch | vs none | samples/s at it | vs none |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for spec in models:
    model = spec.split(":")[0]
    base = None
    for i, planner in enumerate(planners, start=1):
        path = os.path.join(work, f"{model}.{i}.json")
        if not os.path.exists(path):
            print(f"| {spec} | {planner.split(':')[0]} | failed | | | |")
            continue
        with open(path) as f:
            solo = json.load(f)["solo"]
        batch, rate = solo["max_batch"], solo["samples_per_s"]
        if planner == "none":
            base = (batch, rate)
        ratio = lambda a, b: f"{a / b:.2f}x" if base and b else ""
        print(f"| {spec} | {planner.split(':')[0]} | {batch} | {ratio(batch, base[0] if base else 0)} "
              f"| {rate:.1f} | {ratio(rate, base[1] if base else 0)} |")
PY
