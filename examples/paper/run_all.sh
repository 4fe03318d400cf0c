#!/usr/bin/env bash
# Simulates every paper-scale scenario of examples/paper/ with the command in its header and
# prints the tables (about 10 s in all; results are deterministic).
#   examples/paper/run_all.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
tandem=${1:-build}/src/tandem
[ -x "$tandem" ] || { echo "run_all: $tandem not found; build first" >&2; exit 1; }
for workload in examples/paper/*.toml; do
  # The command is the header's "build/src/tandem sim ..." line(s), continuation included.
  command=$(sed -n '/^#   build\/src\/tandem sim/,/^[^#]/p' "$workload" | grep '^#' |
    sed -e 's/^#\s*//' -e 's/\\$//' | tr '\n' ' ' || true)
  [ -n "$command" ] || { echo "run_all: no command in $workload's header" >&2; exit 1; }
  echo "\$ ${command}"
  ${command/build\/src\/tandem/$tandem} | tail -n +2
  echo
done
