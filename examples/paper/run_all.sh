#!/usr/bin/env bash
# Simulates every paper-scale scenario of examples/paper/ with the command in its header and
# prints the tables, each followed by the paper's figure (the header's "paper:" lines) and the
# simulator's (scrooge's samples/s over temporal's, the mean over the rows; about 90 s in all;
# results are deterministic). bench/sim/calibration.sh sets the same figures side by side with
# their errors.
#   examples/paper/run_all.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
tandem=${1:-build}/src/tandem
[ -x "$tandem" ] || { echo "run_all: $tandem not found; build first" >&2; exit 1; }
for workload in examples/paper/*.toml; do
  # The command is the header's "build/src/tandem sim ..." line and its continuations.
  command=$(awk '/^#   build\/src\/tandem sim/ { on = 1 }
                 on { line = $0; sub(/^#[ \t]*/, "", line); more = sub(/\\$/, "", line);
                      printf "%s ", line; if (!more) exit }' "$workload")
  [ -n "$command" ] || { echo "run_all: no command in $workload's header" >&2; exit 1; }
  paper=$(awk '/^# paper:/ { on = 1 } on && /^#/ { line = $0; sub(/^#[ \t]*/, "", line);
                 printf "%s%s", (n++ ? " " : ""), line; next } on { exit }' "$workload")
  echo "\$ ${command}"
  table=$(${command/build\/src\/tandem/$tandem} | tail -n +2)
  echo "$table"
  [ -z "$paper" ] || echo "$paper"
  # Rows are "BATCH POLICY SAMPLES/S ...": scrooge over temporal within each batch, then the mean.
  echo "$table" | awk '$2 == "temporal" { t[$1] = $3 } $2 == "scrooge" { s[$1] = $3; order[k++] = $1 }
    END { n = 0; sum = 0; list = "";
          for (i = 0; i < k; i++) { b = order[i]; if (b in t && t[b] > 0) {
            r = s[b] / t[b]; sum += r; n++; list = list sprintf(" %.2f", r) } }
          if (n) printf "simulator: scrooge %.2fx temporal'\''s samples/s (mean of%s)\n", sum / n, list }'
  echo
done
