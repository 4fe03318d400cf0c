#!/usr/bin/env bash
# NodeGroup against the other policies, every figure measured in this one run (issue: Waterwave
# Table 1, Fig. 7 and Fig. 8 analogues):
#   1. largest batch of two identical jobs as a fraction of the solo largest, for nodegroup,
#      scrooge and spatial: real ResNet-20s on the CPU backend, and simulated ResNet-50 on a
#      V100-32GB and BERT-base on a P100-16GB;
#   2. throughput of nodegroup, scrooge and temporal where two jobs' peaks together exceed the
#      budget: real (examples/scrooge_two_resnets.toml, split 8 MiB), REPEAT runs each,
#      interleaved, medians; simulated (ResNet-50 x2 on the V100 at batch 192 and 256);
#   3. the split-size sweep: largest co-located batch and its throughput over split sizes.
#
#   bench/nodegroup/report.sh [BUILD_DIR] [REPEAT]     (defaults: build, 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "report: $tandem not found; build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

section() { printf '\n== %s ==\n' "$1"; }
rows() { grep -E '^(policy|nodegroup|scrooge|spatial|temporal|exclusive) ' || true; }

section "1. largest batch, two identical jobs (co-located / solo)"
echo "-- real: resnet20 (16 px) on cpu, budget 96 MiB, 8 iterations per run"
for policy in nodegroup scrooge spatial; do
  "$tandem" maxbatch bench/nodegroup/resnet20_pair.toml --policy "$policy" --iterations 8 \
    --low 16 2>/dev/null | rows
done
echo "-- simulated: resnet50 on v100-32gb"
for policy in nodegroup scrooge spatial; do
  "$tandem" maxbatch examples/paper/same_resnet50.toml --sim --gpu v100 --policy "$policy" \
    --iterations 8 --low 16 2>/dev/null | rows
done
echo "-- simulated: bert_base on p100 (16 GB)"
for policy in nodegroup scrooge spatial; do
  "$tandem" maxbatch examples/paper/same_bert_base.toml --sim --gpu p100 --policy "$policy" \
    --iterations 8 --low 4 2>/dev/null | rows
done

section "2. throughput where the two peaks together exceed the budget"
echo "-- real: examples/scrooge_two_resnets.toml (2 x resnet20 b64, peaks 104 MiB each, budget 157 MiB)"
sed 's/^name = "scrooge"/name = "nodegroup"\nsplit_mib = 8/; /^ramp_/d' \
  examples/scrooge_two_resnets.toml >"$work/nodegroup.toml"
for round in $(seq 1 "$repeat"); do
  for policy in nodegroup scrooge temporal; do
    if [ "$policy" = nodegroup ]; then
      "$tandem" run "$work/nodegroup.toml" --quiet --json "$work/$policy.$round.json" >/dev/null || true
    else
      "$tandem" run examples/scrooge_two_resnets.toml --policy "$policy" --quiet \
        --json "$work/$policy.$round.json" >/dev/null || true
    fi
  done
done
python3 - "$work" "$repeat" <<'PY'
import json, statistics, sys
work, repeat = sys.argv[1], int(sys.argv[2])
medians = {}
for policy in ("nodegroup", "scrooge", "temporal"):
    runs = [json.load(open(f"{work}/{policy}.{r}.json")) for r in range(1, repeat + 1)]
    rate = statistics.median(r["aggregate_samples_per_s"] for r in runs)
    span = statistics.median(r["makespan_s"] for r in runs)
    held = max(r["peak_reserved_bytes"] for r in runs) / 2**20
    failed = sum(sum(j["status"] != "completed" for j in r["jobs"]) for r in runs)
    medians[policy] = rate
    print(f"{policy:<10} {rate:8.1f} samples/s  makespan {span:6.2f} s  peak held {held:6.1f} MiB"
          f"  failed jobs {failed} (of {2 * repeat})")
for policy in ("nodegroup", "scrooge"):
    print(f"{policy} / temporal: {medians[policy] / medians['temporal']:.2f}x")
PY
echo "-- simulated: resnet50 x2 on v100-32gb"
"$tandem" sim examples/paper/same_resnet50.toml --gpu v100 --compare temporal,scrooge,nodegroup \
  --sweep-batch 192,256 | grep -E '^(batch|[0-9]+) '

section "3. split-size sweep"
echo "-- real: resnet20 pair on cpu (split in MiB)"
"$tandem" maxbatch bench/nodegroup/resnet20_pair.toml --policy nodegroup --iterations 8 --low 16 \
  --sweep split_mib=2,4,8,16,32 2>/dev/null | grep -E '^(policy|nodegroup|split)' || true
echo "-- simulated: resnet50 pair on v100-32gb (split in MiB)"
"$tandem" maxbatch examples/paper/same_resnet50.toml --sim --gpu v100 --policy nodegroup \
  --iterations 8 --low 16 --sweep split_mib=256,512,1024,2048,4096 2>/dev/null \
  | grep -E '^(policy|nodegroup|split)' || true
echo "-- real: throughput over split sizes where the peaks exceed the budget"
echo "   (examples/scrooge_two_resnets.toml under nodegroup; REPEAT runs each, medians)"
for split in 2 4 8 16 32; do
  sed "s/^name = \"scrooge\"/name = \"nodegroup\"\nsplit_mib = $split/; /^ramp_/d" \
    examples/scrooge_two_resnets.toml >"$work/split$split.toml"
  for round in $(seq 1 "$repeat"); do
    "$tandem" run "$work/split$split.toml" --quiet --json "$work/split$split.$round.json" \
      >/dev/null || true
  done
done
python3 - "$work" "$repeat" <<'PY'
import json, statistics, sys
work, repeat = sys.argv[1], int(sys.argv[2])
print(f"{'split':>6} {'samples/s':>10} {'groups/step':>12} {'forced':>7} {'peak held':>10} failed")
for split in (2, 4, 8, 16, 32):
    runs = [json.load(open(f"{work}/split{split}.{r}.json")) for r in range(1, repeat + 1)]
    stat = lambda r, name: r["policy_stats"][name]
    rate = statistics.median(r["aggregate_samples_per_s"] for r in runs)
    per_step = statistics.median(stat(r, "groups_per_step") for r in runs)
    forced = statistics.median(stat(r, "forced_steps") for r in runs)
    held = max(r["peak_reserved_bytes"] for r in runs) / 2**20
    failed = sum(sum(j["status"] != "completed" for j in r["jobs"]) for r in runs)
    print(f"{split:>5}M {rate:>10.1f} {per_step:>12.2f} {forced:>7.0f} {held:>8.0f} MiB {failed}")
PY
