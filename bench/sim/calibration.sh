#!/usr/bin/env bash
# The simulator against the papers' figures (docs/sim-models.md, "Calibration"): one table of
# figure, paper value, simulator value, error, in one run (a few seconds).
#   bench/sim/calibration.sh [BUILD_DIR]            the table
# The simulator against a lent GPU: bench/sim/gpu_validation.py (scripts/gpu-check.sh runs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 bench/sim/calibration.py "${1:-build}" "${@:2}"
