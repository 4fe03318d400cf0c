#!/usr/bin/env bash
# The footprint planners against keeping every tensor, simulated on an RTX 2080 Ti (11 GB): for
# each model of HOME Table 2 the catalogue has, the largest batch one job trains at alone and its
# throughput there, per baseline planner, every figure from this one run, beside HOME Table 2's
# PyTorch and Capuchin columns (measured on a real 2080 Ti).
#
# Each search is `tandem maxbatch WORKLOAD --sim --gpu 2080ti --jobs 1 --policy exclusive
# --planner P` (no --plan-budget: each probe plans for the whole budget, in regions held); the
# "none" row is the vanilla job. Models run side by side, two at a time.
#
#   bench/footprint/simulated.sh [BUILD_DIR]     (default: build; a few minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "simulated.sh: $tandem not found; build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

planners="none vdnn-all vdnn-conv checkpoint superneurons capuchin"
models="vgg16_cifar resnet50_cifar mobilenetv2_cifar inception_v3_299"

search_model() {
  local model=$1
  for planner in $planners; do
    "$tandem" maxbatch "bench/footprint/$model.toml" --sim --gpu 2080ti --jobs 1 \
      --policy exclusive --planner "$planner" --json "$work/$model.$planner.json" \
      >"$work/$model.$planner.txt" 2>"$work/$model.$planner.log" ||
      echo "simulated.sh: $model under $planner failed; see its log" >&2
  done
}

start=$(date +%s)
printf '%s\n' $models | xargs -P 2 -I{} bash -c "$(declare -f search_model); \
  tandem='$tandem' work='$work' planners='$planners' search_model {}"
elapsed=$(($(date +%s) - start))

python3 - "$work" "$planners" "$models" "$elapsed" <<'PY'
import json, os, sys

work, planners, models, elapsed = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]

# HOME Table 2 (IEEE TPDS; RTX 2080 Ti, 11 GB, PyTorch 1.5.1, CIFAR-10): largest batch and
# training throughput (samples/s) for PyTorch and Capuchin.
home = {
    "vgg16_cifar": ("VGG16", 2759, 2786, 4250, 5120),
    "resnet50_cifar": ("ResNet", 1255, 2285, 2014, 2179),
    "mobilenetv2_cifar": ("MobileNet", 2012, 1706, 3954, 2999),
    "inception_v3_299": ("InceptionV3", 125, 257, 345, 240),
}
names = {
    "vgg16_cifar": "VGG-16 (vgg16, batch norm, 32 px, 10 classes)",
    "resnet50_cifar": "ResNet-50 (resnet50, 32 px, 10 classes)",
    "mobilenetv2_cifar": "MobileNetV2 (mobilenetv2, 32 px, 10 classes)",
    "inception_v3_299": "Inception-v3 (inception_v3, 299 px, 10 classes)",
}

def load(model, planner):
    path = os.path.join(work, f"{model}.{planner}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["solo"]

print("| model | planner | largest batch | vs none | samples/s at it | vs none | HOME Table 2 (2080 Ti) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for model in models:
    base = load(model, "none")
    home_name, pyt_batch, pyt_rate, cap_batch, cap_rate = home[model]
    for planner in planners:
        solo = load(model, planner)
        label = names[model] if planner == planners[0] else ""
        note = "-"
        if planner == "none":
            note = f"{home_name}, PyTorch: {pyt_batch} at {pyt_rate}/s"
        elif planner == "capuchin":
            note = f"{home_name}, Capuchin: {cap_batch} at {cap_rate}/s"
        if solo is None or solo["max_batch"] == 0:
            print(f"| {label} | {planner} | failed | - | - | - | {note} |")
            continue
        batch = f"{solo['max_batch']}{'+' if solo['no_failure_found'] else ''}"
        rate = solo["samples_per_s"]
        batch_ratio = rate_ratio = "-"
        if base and base["max_batch"] > 0:
            batch_ratio = f"{solo['max_batch'] / base['max_batch']:.2f}x"
            rate_ratio = f"{rate / base['samples_per_s']:.2f}x"
        print(f"| {label} | {planner} | {batch} | {batch_ratio} | {rate:.0f} | {rate_ratio} | {note} |")
print()
print("Not in the catalogue: Plain20 and SqueezeNet (HOME's other two models) and MobileNet v1 "
      "(HOME's; MobileNetV2 stands in for it above). HOME does not say which ResNet it trained.")
print(f"Searches took {elapsed} s (tandem maxbatch --sim, two models at a time).")
PY
