#!/usr/bin/env bash
# How far the simulator is from real runs. For each workload: profile its jobs here
# (tandem profile), then under each policy run it for real (tandem run) and simulate it from
# those profiles (tandem sim --profiles), and print both side by side with the relative error of
# aggregate throughput, makespan and peak regions held (bench/sim/fidelity.py). Real runs move
# from run to run on a shared machine, so each case runs ROUNDS times, rounds interleaved (every
# case once, then every case again), and the table compares medians.
#
#   bench/sim/fidelity.sh [BUILD_DIR]
#   ROUNDS=5 WORKLOADS="examples/two_jobs.toml" POLICIES="temporal spatial" bench/sim/fidelity.sh
# Defaults: ROUNDS=3; every examples/*.toml without inference jobs (the simulator replays
# training only); POLICIES="exclusive temporal spatial static scrooge".
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "fidelity: $tandem not found; build first" >&2; exit 1; }
read -r -a workloads <<<"${WORKLOADS:-$(ls examples/*.toml | tr '\n' ' ')}"
read -r -a policies <<<"${POLICIES:-exclusive temporal spatial static scrooge}"
rounds=${ROUNDS:-3}
simulated=()
for workload in "${workloads[@]}"; do
  if grep -q '^kind *= *"inference"' "$workload"; then
    echo "fidelity: skipping $workload: it serves inference, which the simulator does not replay" >&2
  else
    simulated+=("$workload")
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for workload in "${simulated[@]}"; do
  name=$(basename "$workload" .toml)
  echo "fidelity: profiling $workload" >&2
  "$tandem" profile "$workload" --iterations 6 --out "$work/$name.profile.json" >/dev/null
done
for round in $(seq 1 "$rounds"); do
  for workload in "${simulated[@]}"; do
    name=$(basename "$workload" .toml)
    for policy in "${policies[@]}"; do
      echo "fidelity: round $round/$rounds: $name under $policy (real, then simulated)" >&2
      # Exit status 3: a job failed (spatial or static on a tight budget); still compared.
      "$tandem" run "$workload" --policy "$policy" --quiet \
        --json "$work/$name.$policy.$round.real.json" >/dev/null || [ $? -eq 3 ]
      "$tandem" sim "$workload" --profiles "$work/$name.profile.json" --policy "$policy" \
        --seed "$round" --json "$work/$name.$policy.$round.sim.json" >/dev/null || [ $? -eq 3 ]
    done
  done
done
python3 bench/sim/fidelity.py "$work"
