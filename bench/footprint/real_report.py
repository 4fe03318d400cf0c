"""Tables of bench/footprint/real.sh: medians over its rounds."""
import glob
import json
import os
import statistics
import sys

work, copy = sys.argv[1], sys.argv[2]


def load(path):
    with open(path) as f:
        return json.load(f)["jobs"][0]


def mib(n):
    return f"{n / 2**20:.2f}"


def median(values):
    return statistics.median(values) if values else float("nan")


runs = {}
for path in glob.glob(os.path.join(work, "plan.*.json")):
    _, model, batch, planner, budget, _round, _ = os.path.basename(path).split(".")
    runs.setdefault((model, int(batch), int(budget), planner), []).append(load(path))

print(f"Measured planned iterations against the job's vanilla iteration (copy bandwidth {copy}; "
      "medians over rounds). Peak err / time err: the cost model's prediction against measured; "
      "repriced: the plan priced again at the operation times its first planned iteration "
      "measured.\n")
print("| model | batch | budget | planner | vanilla peak MiB | planned peak MiB | MSR | EOR "
      "| peak err | time err | repriced time err | swapped out MiB | stall s | recomputed | status |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (model, batch, budget, planner), jobs in sorted(runs.items()):
    done = [j for j in jobs if j["status"] == "completed" and j.get("footprint")]
    if not done:
        print(f"| {model} | {batch} | {budget}% | {planner} | | | | | | | | | | | "
              f"{jobs[0]['status']}: {jobs[0]['error'][:60]} |")
        continue
    f = [j["footprint"] for j in done]
    peak_err = median([abs(x["predicted_peak_bytes"] - x["planned_peak_bytes"]) /
                       x["planned_peak_bytes"] for x in f])
    time_err = median([abs(x["predicted_iteration_s"] - x["planned_iteration_s"]) /
                       x["planned_iteration_s"] for x in f])
    # A plan that moves nothing is not priced again: its prediction is the reference's.
    repriced = [x.get("repriced_iteration_s") or x["predicted_iteration_s"] for x in f]
    repriced_err = median([abs(r - x["planned_iteration_s"]) / x["planned_iteration_s"]
                           for r, x in zip(repriced, f)])
    print(f"| {model} | {batch} | {budget}% | {planner} "
          f"| {mib(median([x['vanilla_peak_bytes'] for x in f]))} "
          f"| {mib(median([x['planned_peak_bytes'] for x in f]))} "
          f"| {median([x['msr'] for x in f]):.3f} | {median([x['eor'] for x in f]):.3f} "
          f"| {100 * peak_err:.1f}% | {100 * time_err:.1f}% | {100 * repriced_err:.1f}% "
          f"| {mib(median([x['swapped_out_bytes'] for x in f]))} "
          f"| {median([x['stall_s'] for x in f]):.3f} "
          f"| {median([x['recomputations'] for x in f]):.0f} | {len(done)}/{len(jobs)} completed |")

overhead = {}
for path in glob.glob(os.path.join(work, "overhead.*.json")):
    _, model, batch, planner, _round, _ = os.path.basename(path).split(".")
    job = load(path)
    times = [i["end_s"] - i["start_s"] for i in job["iteration_log"][4:]]
    overhead.setdefault((model, int(batch)), {}).setdefault(planner, []).append(median(times))
print("\nExecutor overhead: median iteration (iterations 4 on) with planner \"none\" (the executor "
      "of a plan that moves nothing) and of a second run with no planner (the control), against "
      "no planner; ratios of the medians over rounds.\n")
print("| model | batch | no planner s | planner none s | ratio | control ratio |")
print("|---|---|---|---|---|---|")
for (model, batch), by in sorted(overhead.items()):
    plain, none = median(by.get("-", [])), median(by.get("none", []))
    control = median(by.get("control", [])) if by.get("control") else float("nan")
    print(f"| {model} | {batch} | {plain:.4f} | {none:.4f} | {none / plain:.3f} "
          f"| {control / plain:.3f} |")
