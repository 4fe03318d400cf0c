#!/usr/bin/env bash
# Real training jobs side by side under several policies, measured in one run: aggregate
# throughput (samples/s over the makespan), each policy's ratio to temporal, peak regions held,
# and how much of the time two or more jobs were mid-iteration at once (overlap). The policies
# run interleaved, REPEAT rounds; the table shows medians. A policy whose jobs fail is reported
# with the failure (spatial is meant to fail on a budget below the jobs' summed peaks).
#
#   bench/colocate/colocate.sh [BUILD_DIR] [REPEAT]      (defaults: build, 3)
#   WORKLOAD=bench/colocate/two_resnets_tight.toml POLICIES="temporal scrooge spatial" \
#     TIMELINE=scrooge bench/colocate/colocate.sh build 3
#   SCALE=2 ...                                            (twice the iterations)
# Defaults: WORKLOAD=bench/colocate/resnet56_lstm.toml, POLICIES="exclusive temporal spatial".
# TIMELINE=POLICY also draws that policy's regions held per job over time, from its last round.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
scale=${SCALE:-1}
workload=${WORKLOAD:-bench/colocate/resnet56_lstm.toml}
read -r -a policies <<<"${POLICIES:-exclusive temporal spatial}"
timeline_policy=${TIMELINE:-}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "colocate: $tandem not found; build first (scripts/quickstart.sh)" >&2; exit 1; }
[ -f "$workload" ] || { echo "colocate: no workload file $workload" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e "s/THREADS/$(nproc)/" -e "s/ITERATIONS_RESNET/$((40 * scale))/" \
    -e "s/ITERATIONS_LSTM/$((20 * scale))/" "$workload" >"$work/workload.toml"

for round in $(seq 1 "$repeat"); do
  for policy in "${policies[@]}"; do
    echo "colocate: round $round/$repeat, $policy" >&2
    timeline=()
    if [[ "$policy" == "$timeline_policy" ]]; then timeline=(--timeline "$work/timeline.csv"); fi
    # Exit status 3 means a job failed; its results are still written and reported below.
    "$tandem" run "$work/workload.toml" --policy "$policy" --quiet \
      --json "$work/$policy-$round.json" "${timeline[@]}" >/dev/null || [ $? -eq 3 ]
  done
done

python3 bench/colocate/report.py "$work" "$repeat" "${timeline_policy:--}" "${policies[@]}"
