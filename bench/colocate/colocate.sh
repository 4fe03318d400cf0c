#!/usr/bin/env bash
# Two real training jobs (ResNet-56 and the LSTM language model) under exclusive, temporal and
# spatial, with an ample budget: aggregate throughput (samples/s over the makespan) and each
# policy's ratio to temporal, measured in one run. The policies run interleaved, REPEAT rounds,
# and the table shows medians.
#
#   bench/colocate/colocate.sh [BUILD_DIR] [REPEAT]      (defaults: build, 3)
#   SCALE=2 bench/colocate/colocate.sh                   (twice the iterations)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
scale=${SCALE:-1}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "colocate: $tandem not found; build first (scripts/quickstart.sh)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e "s/THREADS/$(nproc)/" -e "s/ITERATIONS_RESNET/$((40 * scale))/" \
    -e "s/ITERATIONS_LSTM/$((20 * scale))/" bench/colocate/resnet56_lstm.toml >"$work/workload.toml"

policies=(exclusive temporal spatial)
for round in $(seq 1 "$repeat"); do
  for policy in "${policies[@]}"; do
    echo "colocate: round $round/$repeat, $policy" >&2
    "$tandem" run "$work/workload.toml" --policy "$policy" --quiet \
      --json "$work/$policy-$round.json" >/dev/null
  done
done

python3 - "$work" "$repeat" "${policies[@]}" <<'PY'
import json, statistics, sys
work, repeat, policies = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
for policy in policies:
    runs = [json.load(open(f"{work}/{policy}-{r}.json")) for r in range(1, repeat + 1)]
    for run in runs:
        if run["failed_jobs"]:
            sys.exit(f"colocate: a job failed under {policy}: " +
                     "; ".join(j["error"] for j in run["jobs"] if j["status"] == "failed"))
    rows[policy] = {
        "samples": statistics.median(r["aggregate_samples_per_s"] for r in runs),
        "makespan": statistics.median(r["makespan_s"] for r in runs),
        "peak": statistics.median(r["peak_reserved_bytes"] for r in runs) / 2**20,
        "jobs": {j["name"]: statistics.median(
            next(x for x in r["jobs"] if x["name"] == j["name"])["samples_per_s"] for r in runs)
            for j in runs[0]["jobs"]},
    }
base = rows["temporal"]["samples"]
names = list(rows[policies[0]]["jobs"])
print(f"median of {repeat} interleaved rounds; aggregate = all samples / makespan")
print(f"{'policy':<10} {'aggregate samples/s':>20} {'vs temporal':>12} {'makespan s':>11} "
      f"{'peak held MiB':>14} " + " ".join(f"{n + ' samples/s':>18}" for n in names))
for policy, row in rows.items():
    print(f"{policy:<10} {row['samples']:>20.1f} {row['samples'] / base:>11.2f}x "
          f"{row['makespan']:>11.2f} {row['peak']:>14.0f} " +
          " ".join(f"{row['jobs'][n]:>18.1f}" for n in names))
PY
