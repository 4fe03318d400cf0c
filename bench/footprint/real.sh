#!/usr/bin/env bash
# Real zoo models under every baseline planner at plan budgets of 75%, 50% and 33% of their
# vanilla peak, trained by `tandem run` on the cpu backend at the matched copy bandwidth: the
# planned iterations' measured peak against the job's vanilla (reference) iteration, MSR, EOR,
# and the cost model's error on the planned peak and iteration time. Then the executor's
# overhead: the same job with planner "none" (the executor of a plan that moves nothing) against
# no planner, beside a second run with no planner (the control: what identical runs differ by).
# Runs are interleaved, REPEAT rounds; tables show medians.
#
#   bench/footprint/real.sh [BUILD_DIR] [REPEAT]        (defaults: build, 3)
#   MODELS="resnet20:16 mlp:64" BUDGETS="75 50 33" PLANNERS="none checkpoint capuchin" \
#     COPY=auto ITERATIONS=7 bench/footprint/real.sh build 3
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
read -r -a models <<<"${MODELS:-resnet20:16 mlp:64}"
read -r -a budgets <<<"${BUDGETS:-75 50 33}"
read -r -a planners <<<"${PLANNERS:-none vdnn-all vdnn-conv checkpoint superneurons capuchin}"
copy=${COPY:-auto}
iterations=${ITERATIONS:-7}  # 4 before the plan runs: warm-up, recorded, settling, reference
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "real.sh: $tandem not found; build first" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

workload() {  # model batch planner budget -> file
  local file="$work/$1-$2-$3-$4.toml"
  {
    printf '[device]\nkind = "cpu"\ncapacity = "4GiB"\nbudget = "2GiB"\nregion_size = "2MiB"\n'
    printf 'copy_bandwidth = "%s"\n\n[policy]\nname = "exclusive"\n\n' "$copy"
    printf '[[job]]\nname = "job"\nmodel = "%s"\nbatch_size = %s\niterations = %s\n' \
      "$1" "$2" "$iterations"
    if [ "$3" != "-" ]; then printf 'planner = "%s"\nplan_budget = "%s%%"\n' "$3" "$4"; fi
  } >"$file"
  echo "$file"
}

for round in $(seq 1 "$repeat"); do
  for entry in "${models[@]}"; do
    model=${entry%%:*}
    batch=${entry##*:}
    for budget in "${budgets[@]}"; do
      for planner in "${planners[@]}"; do
        echo "real.sh: round $round/$repeat, $model batch $batch, $planner at $budget%" >&2
        file=$(workload "$model" "$batch" "$planner" "$budget")
        "$tandem" run "$file" --quiet --json "$work/plan.$model.$batch.$planner.$budget.$round.json" \
          >/dev/null || [ $? -eq 3 ]
      done
    done
    # The executor's overhead: nothing planned against nothing installed, back to back, and a
    # second run with nothing installed as the control (what two identical runs differ by);
    # the order turns each round.
    runs=(- none control)
    for k in 0 1 2; do
      planner=${runs[$(((k + round) % 3))]}
      file=$(workload "$model" "$batch" "${planner/control/-}" 100)
      "$tandem" run "$file" --quiet --json "$work/overhead.$model.$batch.$planner.$round.json" \
        >/dev/null || [ $? -eq 3 ]
    done
  done
done

python3 bench/footprint/real_report.py "$work" "$copy"
