#!/usr/bin/env bash
# How fast a large report is: the 100-job Salus-like trace (examples/paper/salus_trace_100.toml,
# made by bench/sim/make_salus_trace.py; about 20,000 iterations and 1.4 million timeline rows)
# simulated under scrooge, its report built by `tandem report` from the JSON and the timeline, and
# the page opened ROUNDS times in headless Chromium. Prints the sizes, the time tandem takes to
# build the page, and the page's own drawing time (performance.now() when drawing ended: from
# navigation start, so parsing the HTML and its data is included) with Chromium's whole wall time
# beside it (start-up included). Target: the page drawn in under 2 s.
#
#   bench/report/render.sh [BUILD_DIR] [ROUNDS]     (defaults: build, 5)
#   WORKLOAD=examples/paper/rhn_gnmt.toml GPU=2080ti bench/report/render.sh build 3
#   SIM_ARGS="--budget 8GiB --policy-planner tensile" bench/report/render.sh   # plans, waits
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
rounds=${2:-5}
workload=${WORKLOAD:-examples/paper/salus_trace_100.toml}
gpu=${GPU:-p100}
policy=${POLICY:-scrooge}
tandem=$build/src/tandem
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$tandem" ] || { echo "render: $tandem not found; build first" >&2; exit 1; }
[ -x "$chromium" ] || { echo "render: $chromium not found (scripts/install-deps.sh)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086  # SIM_ARGS is a list of arguments
"$tandem" sim "$workload" --gpu "$gpu" --policy "$policy" ${SIM_ARGS:-} --json "$work/r.json" \
  --timeline "$work/t.csv" >/dev/null || [ $? -eq 3 ]
start=$EPOCHREALTIME
"$tandem" report "$work/r.json" --timeline "$work/t.csv" --out "$work/report.html" >/dev/null
end=$EPOCHREALTIME
size() { stat -c %s "$1" | awk '{ printf "%.1f MB", $1 / 1e6 }'; }
echo "$workload under $policy on $gpu"
echo "results $(size "$work/r.json"), timeline $(size "$work/t.csv") ($(wc -l <"$work/t.csv") rows)"
echo "report $(size "$work/report.html"), built in $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }') s"

draw=()
wall=()
for round in $(seq 1 "$rounds"); do
  profile="$work/profile-$round"
  start=$EPOCHREALTIME
  body=$("$chromium" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
    --window-size=1280,1400 --dump-dom "file://$work/report.html" 2>/dev/null | grep -o '<body[^>]*>')
  end=$EPOCHREALTIME
  state=$(sed -n 's/.*data-render-state="\([^"]*\)".*/\1/p' <<<"$body")
  errors=$(sed -n 's/.*data-errors="\([^"]*\)".*/\1/p' <<<"$body")
  [ "$state" = done ] && [ "$errors" = 0 ] || { echo "render: the page failed ($state, $errors errors)" >&2; exit 1; }
  draw+=("$(sed -n 's/.*data-render-ms="\([^"]*\)".*/\1/p' <<<"$body")")
  wall+=("$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", (e - s) * 1000 }')")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "drawn in $(median "${draw[@]}") ms (median of $rounds; each: ${draw[*]} ms)"
echo "chromium wall $(median "${wall[@]}") ms (median; start-up included)"
