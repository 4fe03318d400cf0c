#!/usr/bin/env bash
# What following a plan's operations costs, counted in instructions rather than timed: one real
# job trained by `tandem run` under valgrind's callgrind, which counts the same instructions
# however busy the machine is (wall-clock differences of 1-2% drown in this machine's noise).
# Prints, for each build given, the instructions of the training iterations, those of the plan
# executor's operation callbacks and saved-tensor hooks (inclusive, less the recomputations they
# run), and their share, per planned iteration. Give two builds to compare them side by side on
# the same job. Counts differ by well under 1% between runs of one build (checkpoint's executor:
# 2,999,666 and 2,992,546 instructions per planned iteration in two runs), far less than time.
#
#   bench/footprint/follow_instructions.sh BUILD_DIR [BUILD_DIR...]
#   MODEL=resnet20 BATCH=8 PLANNER=checkpoint BUDGET=50% ITERATIONS=8 \
#     bench/footprint/follow_instructions.sh build /tmp/other-build
#
# About 10 minutes a build for ResNet-20 at batch 8 (callgrind runs libtorch 50-100 times
# slower; most of it is loading libtorch). Copies run at memcpy speed so that the plan moves
# what it would on a GPU without the matched copy engine's waits.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [BUILD_DIR...]" >&2; exit 2; }
command -v valgrind >/dev/null ||
  { echo "follow_instructions.sh: valgrind not found (apt install valgrind)" >&2; exit 1; }
model=${MODEL:-resnet20}
batch=${BATCH:-8}
planner=${PLANNER:-checkpoint}
budget=${BUDGET:-50%}
iterations=${ITERATIONS:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/job.toml" <<EOF
[device]
kind = "cpu"
capacity = "4GiB"
budget = "2GiB"
region_size = "2MiB"
copy_bandwidth = "memcpy"

[policy]
name = "exclusive"

[[job]]
name = "job"
model = "$model"
batch_size = $batch
iterations = $iterations
threads = 1
planner = "$planner"
plan_budget = "$budget"
EOF

echo "$model batch $batch, planner $planner at $budget, $iterations iterations, under callgrind"
printf '%-40s %16s %16s %10s %8s\n' build "iteration Ir" "executor Ir" share planned
for build in "$@"; do
  tandem=$build/src/tandem
  [ -x "$tandem" ] || { echo "follow_instructions.sh: $tandem not found; build first" >&2; exit 1; }
  out="$work/$(basename "$build").$RANDOM"
  valgrind --tool=callgrind --callgrind-out-file="$out.cg" "$tandem" run "$work/job.toml" \
    --quiet --json "$out.json" >"$out.log" 2>&1
  callgrind_annotate --inclusive=yes --threshold=100 "$out.cg" >"$out.txt" 2>/dev/null
  python3 - "$out.txt" "$out.json" "$build" <<'PY'
import json, re, sys
annotated, results, build = sys.argv[1:4]
inclusive = {}
for line in open(annotated):
    m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*?:(.*?) \[", line)
    if m:
        inclusive.setdefault(m.group(2), int(m.group(1).replace(",", "")))
def total(pattern):
    return sum(v for k, v in inclusive.items() if re.search(pattern, k))
iterations = total(r"train_iterations\(")
# The callbacks' and hooks' work, less the recomputations they run (the plan's own work, which
# the cost model prices).
callbacks = r"plan_executor::operation_(started|ended)\(|executor_hooks::call_(un)?pack_hook\("
executor = total(callbacks) - total(r"executor_ops::rebuild\(")
job = json.load(open(results))["jobs"][0]
planned = job["footprint"]["planned_iterations"]
iteration_ir = iterations / len(job["iteration_log"])
executor_ir = executor / max(planned, 1)
print(f"{build[-40:]:<40} {iteration_ir:16,.0f} {executor_ir:16,.0f} "
      f"{100 * executor_ir / max(iteration_ir, 1):9.2f}% {planned:8}")
PY
done
echo "iteration Ir: the training iterations' instructions over their count (recorded and planned"
echo "alike); executor Ir: its callbacks' and hooks' instructions per planned iteration, less the"
echo "recomputations they run; share: executor Ir over iteration Ir."
