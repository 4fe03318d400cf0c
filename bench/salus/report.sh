#!/usr/bin/env bash
# Salus's policies against FIFO, every figure measured in this one run (Salus Table 2, Fig. 12
# and Fig. 13 analogues):
#   1. a long job and short arrivals on the CPU backend (real training): fifo, srtf, pack and
#      fair, REPEAT interleaved rounds, medians: makespan, average queuing, average and 95% JCT;
#   2. the 100-job trace of Salus §5.1's style, simulated on a P100-16GB;
#   3. a hyper-parameter batch (identical jobs arriving together), pack against fifo makespan:
#      simulated (40 small MobileNetV2s, 20 ResNet-50s on the P100) and real (8 small
#      ResNet-20s on the CPU);
#   4. inference: how many small models one budget serves under pack, all admitted at once and
#      each with its p95 latency under BOUND_MS (10 requests per second per model, Poisson).
#
#   bench/salus/report.sh [BUILD_DIR] [REPEAT] [BOUND_MS]     (defaults: build, 3, 50)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
repeat=${2:-3}
bound_ms=${3:-50}
tandem=$build/src/tandem
[ -x "$tandem" ] || { echo "report: $tandem not found; build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
policies="fifo srtf pack fair"

section() { printf '\n== %s ==\n' "$1"; }
runs_of() {  # policy -> "policy=file1,file2,..."
  local files
  files=$(ls "$work"/"$2"_"$1"_*.json | paste -sd, -)
  echo "$1=$files"
}

section "1. long job + short arrivals, real on cpu (bench/salus/long_and_short.toml), $repeat rounds"
for round in $(seq "$repeat"); do
  for policy in $policies; do
    "$tandem" run bench/salus/long_and_short.toml --policy "$policy" --quiet \
      --json "$work/trace_${policy}_$round.json" > /dev/null
  done
done
python3 bench/salus/report.py $(for p in $policies; do runs_of "$p" trace; done)

section "2. 100-job trace, simulated on a P100-16GB (examples/paper/salus_trace_100.toml)"
"$tandem" sim examples/paper/salus_trace_100.toml --gpu p100 --compare fifo,srtf,pack,fair \
  --json "$work/sim100.json" > /dev/null
python3 - "$work" <<'PY'
import json, sys
rows = json.load(open(f"{sys.argv[1]}/sim100.json"))
for r in rows:
    json.dump(r, open(f"{sys.argv[1]}/sim100_{r['policy']}_1.json", "w"))
PY
python3 bench/salus/report.py --unit min $(for p in $policies; do runs_of "$p" sim100; done)

section "3. hyper-parameter batch: makespan, pack against fifo"
echo "-- simulated, P100-16GB: 40 x mobilenetv2 (32 px) batch 32, 300 iterations"
bench/salus/make_batch.py --jobs 40 --model mobilenetv2 --batch 32 --iterations 300 \
  > "$work/hp_small.toml"
"$tandem" sim "$work/hp_small.toml" --gpu p100 --compare fifo,pack | tail -n 2
echo "-- simulated, P100-16GB: 20 x resnet50 (224 px) batch 50, 100 iterations"
bench/salus/make_batch.py --jobs 20 --model resnet50 --batch 50 --iterations 100 \
  --option image_side=224 --option classes=1000 > "$work/hp_r50.toml"
"$tandem" sim "$work/hp_r50.toml" --gpu p100 --compare fifo,pack | tail -n 2
echo "-- real, cpu: 8 x resnet20 (16 px) batch 16, 150 iterations, budget 128 MiB"
bench/salus/make_batch.py --jobs 8 --model resnet20 --batch 16 --iterations 150 \
  --option image_side=16 --cpu --capacity 1GiB --budget 128MiB > "$work/hp_cpu.toml"
for policy in fifo pack; do
  "$tandem" run "$work/hp_cpu.toml" --policy "$policy" --quiet --json "$work/hp_${policy}_1.json" \
    > /dev/null
done
python3 bench/salus/report.py $(for p in fifo pack; do runs_of "$p" hp; done)

section "4. inference: small models served under pack, budget 64 MiB, p95 bound ${bound_ms} ms"
echo "-- resnet20 (16 px), one sample per request, 10 requests/s per model, 100 requests each"
served=0
for models in 1 2 4 8 16 24 32 48; do
  bench/salus/make_batch.py --kind inference --jobs "$models" --model resnet20 --batch 1 \
    --rate 10 --requests 100 --option image_side=16 --cpu --capacity 1GiB --budget 64MiB \
    --policy pack > "$work/serve_$models.toml"
  "$tandem" run "$work/serve_$models.toml" --quiet --json "$work/serve_$models.json" \
    > /dev/null || true
  # Served: every model admitted within a second of arriving (live together) and every p95
  # within the bound.
  if python3 bench/salus/report.py --latency "$work/serve_$models.json" --bound-ms "$bound_ms"; then
    served=$models
  else
    break
  fi
done
echo "most models served with every p95 <= ${bound_ms} ms: $served (without sharing: 1 per device)"
