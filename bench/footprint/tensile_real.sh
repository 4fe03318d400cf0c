#!/usr/bin/env bash
# TENSILE's Tables 1 and 2, real: VGG-16 x1, x2 and x3 started together on the cpu backend
# (spatial policy: every job runs at once), each job under vdnn-all, capuchin or tensile at a
# plan budget of PLAN_BUDGET% (half) of its vanilla peak, against the same jobs under planner
# "none" (the executor of a plan that moves nothing, which follows no operation: as vanilla
# training). System-wide MSR: 1 - the jobs' summed live bytes at their highest
# once every job runs planned iterations (from its iteration 4) / the same under "none"; EOR:
# the jobs' median planned iteration against theirs under "none", averaged over the jobs;
# CBR = MSR / EOR. tensile's jobs are planned together, on the one copy channel they share
# (runtime/joint_footprint.hpp); vdnn-all's and capuchin's job by job.
# Runs are interleaved, REPEAT rounds; the table shows medians.
#
#   bench/footprint/tensile_real.sh [BUILD_DIR] [REPEAT]        (defaults: build, 3)
#   BATCH=32 JOBS="1 2 3" PLANNERS="vdnn-all capuchin tensile" COPY=memcpy ITERATIONS=9 PLAN_BUDGET=50 \
#     bench/footprint/tensile_real.sh build 3
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
batch=${BATCH:-32}
read -r -a counts <<<"${JOBS:-1 2 3}"
read -r -a planners <<<"${PLANNERS:-vdnn-all capuchin tensile}"
copy=${COPY:-memcpy}
plan_budget=${PLAN_BUDGET:-50}  # % of each job's vanilla peak
iterations=${ITERATIONS:-9}  # 4 before the plan runs: warm-up, recorded, settling, reference
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "tensile_real.sh: $tandem not found; build first" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

workload() {  # jobs planner -> file
  local file="$work/vgg16-$1-${2//[:=,]/_}.toml"
  {
    printf '[device]\nkind = "cpu"\ncapacity = "8GiB"\nbudget = "6GiB"\nregion_size = "2MiB"\n'
    printf 'copy_bandwidth = "%s"\n\n[policy]\nname = "spatial"\n\n' "$copy"
    for j in $(seq 1 "$1"); do
      printf '[[job]]\nname = "vgg%s"\nmodel = "vgg16"\nbatch_size = %s\niterations = %s\n' \
        "$j" "$batch" "$iterations"
      printf 'threads = 1\nplanner = "%s"\nplan_budget = "%s%%"\n\n' "$2" "$plan_budget"
    done
  } >"$file"
  echo "$file"
}

for round in $(seq 1 "$repeat"); do
  for n in "${counts[@]}"; do
    for planner in none "${planners[@]}"; do
      echo "tensile_real.sh: round $round/$repeat, VGG-16 x$n, $planner" >&2
      file=$(workload "$n" "$planner")
      stem="$work/run.$n.${planner//[:=,]/_}.$round"
      "$tandem" run "$file" --quiet --json "$stem.json" --timeline "$stem.csv" >/dev/null ||
        [ $? -eq 3 ]
    done
  done
done

python3 bench/footprint/tensile_real_report.py "$work" "$copy" "$batch" "$plan_budget"
