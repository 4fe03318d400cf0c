#!/usr/bin/env bash
# TENSILE simulated (issue 17): Tables 1 and 2 analogues (VGG-16 x1, x2, x3 started together on
# an RTX 2080 Ti at batch 2: MSR, EOR, CBR of vdnn-all, capuchin and tensile, priced by the cost
# model with one shared copy channel), a job arriving mid-run before and after re-planning, the
# time to re-plan (Google Benchmark), and the largest batch of one and of three identical
# VGG-16 jobs under none, capuchin and tensile (`tandem maxbatch --sim`).
#
#   bench/footprint/tensile_sim.sh [BUILD_DIR]     (default: build)
# Needs the targets tandem, tandem_tensile_tables and tandem_tensile_replan_bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
tables=$build/bench/footprint/tandem_tensile_tables
replan=$build/bench/footprint/tandem_tensile_replan_bench
tandem=$build/src/tandem
for binary in "$tables" "$replan" "$tandem"; do
  [ -x "$binary" ] || { echo "tensile_sim.sh: $binary not found; build it first" >&2; exit 1; }
done

echo "## Tables 1-2 analogues, optimizer step per parameter (TENSILE's framework)"
"$tables" vgg16 2
echo
echo "## The same with the catalogue's fused optimizer step"
"$tables" vgg16 2 fused | sed -n '3,14p'
echo
echo "## The same with each update right after its gradient is complete (a dataflow order)"
"$tables" vgg16 2 in-backward | sed -n '3,14p'
echo
echo "## ImageNet's VGG-16 (224 px, 1000 classes, 4096 wide), per parameter and in backward"
"$tables" vgg16 2 per-parameter image_side=224,classes=1000,hidden=4096 | sed -n '1,14p'
"$tables" vgg16 2 in-backward image_side=224,classes=1000,hidden=4096 | sed -n '1,14p'
echo
echo "## Re-planning time"
"$replan" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null |
  grep -E "^(Benchmark|BM_)" | grep -v -E "_(stddev|cv)"
echo
echo "## Largest batch, VGG-16 (CIFAR images) on a simulated 2080 Ti"
# `tandem maxbatch --jobs N`: the largest batch of each of N identical jobs side by side under
# free spatial sharing (planned: every job by the planner; tensile plans them jointly).
printf '| planner | one job | each of three jobs |\n| --- | ---: | ---: |\n'
for planner in none capuchin tensile; do
  row=$("$tandem" maxbatch bench/footprint/vgg16_cifar.toml --sim --gpu 2080ti --jobs 3 \
    --policy spatial --planner "$planner" 2>/dev/null | awk '$1 == "spatial" {print $3, $4}')
  read -r solo three <<<"${row:-failed failed}"
  printf '| %s | %s | %s |\n' "$planner" "$solo" "$three"
done
