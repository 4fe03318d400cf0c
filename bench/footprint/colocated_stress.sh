#!/usr/bin/env bash
# Three TENSILE-planned VGG-16s (batch 4, 12 iterations, plan budget half the vanilla peak,
# copies at memcpy speed) under a budget below their vanilla peaks added up (480 MiB against
# 3 x 183 MiB), run again and again under one policy: the stress that found a memory-aware
# policy failing a planned job and three hangs (README, "Under a budget below the vanilla peaks
# added up"). Counts runs that failed a job and runs that stalled (no exit within STALL
# seconds: the run is stopped with SIGTERM, which writes its results), and checks that every
# job of every run had the same losses (a prefix of them for a stopped one).
#
#   bench/footprint/colocated_stress.sh [BUILD_DIR] [POLICY] [RUNS]   (build, scrooge, 20)
#   BUDGET=480MiB STALL=60 bench/footprint/colocated_stress.sh build nodegroup 20
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
policy=${2:-scrooge}
runs=${3:-20}
budget=${BUDGET:-480MiB}
stall=${STALL:-60}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "colocated_stress.sh: $tandem not found; build first" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  printf '[device]\nkind = "cpu"\ncapacity = "8GiB"\nbudget = "6GiB"\nregion_size = "2MiB"\n'
  printf 'copy_bandwidth = "memcpy"\n\n[policy]\nname = "spatial"\n'
  for j in 1 2 3; do
    printf '\n[[job]]\nname = "vgg%s"\nmodel = "vgg16"\nbatch_size = 4\niterations = 12\n' "$j"
    printf 'threads = 1\nplanner = "tensile"\nplan_budget = "50%%"\n'
  done
} >"$work/w.toml"

stalled=0
for i in $(seq 1 "$runs"); do
  status=0
  timeout -s TERM "$stall" "$tandem" run "$work/w.toml" --budget "$budget" --policy "$policy" \
    --quiet --json "$work/run_$i.json" >"$work/run_$i.txt" 2>&1 || status=$?
  if [ "$status" -eq 124 ]; then stalled=$((stalled + 1)); fi
  echo "colocated_stress.sh: run $i/$runs exit $status" >&2
done

python3 - "$work" "$runs" "$stalled" "$policy" "$budget" <<'PY'
import glob, json, os, statistics, sys
work, runs, stalled, policy, budget = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
failed_runs, made_room, throughput, losses = 0, 0, [], []
for path in sorted(glob.glob(os.path.join(work, "run_*.json"))):
    with open(path) as f:
        run = json.load(f)
    failed_runs += run["failed_jobs"] > 0
    made_room += any((j.get("footprint") or {}).get("evicted_bytes", 0) > 0 for j in run["jobs"])
    if not run.get("stopped"):
        throughput.append(run["aggregate_samples_per_s"])
    losses += [[it["loss"] for it in j["iteration_log"]] for j in run["jobs"]]
longest = max(losses, key=len) if losses else []
same = all(l == longest[: len(l)] for l in losses)
print(f"{policy} at {budget}: {runs} runs, {failed_runs} failed a job, {stalled} stalled, "
      f"{made_room} made room out of turn; losses {'bitwise equal' if same else 'DIFFER'} "
      f"across {len(losses)} jobs; median {statistics.median(throughput) if throughput else 0:.1f} "
      f"samples/s")
sys.exit(0 if failed_runs == 0 and stalled == 0 and same else 1)
PY
