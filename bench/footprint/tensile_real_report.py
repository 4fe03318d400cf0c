"""Tables of bench/footprint/tensile_real.sh: system-wide MSR, EOR and CBR, medians over rounds."""
import csv
import glob
import json
import os
import statistics
import sys

work, copy, batch = sys.argv[1], sys.argv[2], sys.argv[3]
plan_budget = sys.argv[4] if len(sys.argv) > 4 else "50"


def median(values):
    return statistics.median(values) if values else float("nan")


def spread(values):
    """The rounds' lowest and highest, after a median of more than one round."""
    return f" ({min(values):.3f} to {max(values):.3f})" if len(values) > 1 else ""


def planned_window_start(jobs):
    """When the last job began its first planned iteration (iteration 4)."""
    return max(job["iteration_log"][4]["start_s"] for job in jobs)


def system_peak(timeline, since_s):
    """The jobs' summed live bytes at their highest from `since_s` on."""
    live = {}
    peak = 0
    with open(timeline) as f:
        for row in csv.DictReader(f):
            live[row["job"]] = int(row["live_bytes"])
            if float(row["time_s"]) >= since_s:
                peak = max(peak, sum(live.values()))
    return peak


def planned_seconds(job):
    """The median length of a job's planned iterations."""
    return median([it["end_s"] - it["start_s"] for it in job["iteration_log"][4:]])


runs = {}
for path in glob.glob(os.path.join(work, "run.*.json")):
    _, n, planner, _round, _ = os.path.basename(path).split(".")
    with open(path) as f:
        result = json.load(f)
    jobs = result["jobs"]
    if any(j["status"] != "completed" or len(j["iteration_log"]) < 4 for j in jobs):
        runs.setdefault((int(n), planner), []).append(None)
        continue
    peak = system_peak(path[:-len(".json")] + ".csv", planned_window_start(jobs))
    runs.setdefault((int(n), planner), []).append(
        {"round": _round, "peak": peak, "seconds": [planned_seconds(j) for j in jobs],
         "swapped": sum((j.get("footprint") or {}).get("swapped_out_bytes", 0) for j in jobs)
         / max(1, sum((j.get("footprint") or {}).get("planned_iterations", 0) for j in jobs))})

print(f"VGG-16 batch {batch}, jobs started together under spatial, copy bandwidth {copy}; "
      f"plan budget {plan_budget}% of each job's vanilla peak; medians over rounds "
      "(lowest to highest).\n")
print("| jobs | planner | vanilla peak MiB | planned peak MiB | MSR | EOR | CBR "
      "| swapped out MiB per job-iteration | completed |")
print("|---|---|---|---|---|---|---|---|---|")
for n in sorted({n for n, _ in runs}):
    reference = {r["round"]: r for r in runs.get((n, "none"), []) if r}
    for planner in sorted({p for m, p in runs if m == n and p != "none"}):
        rows = runs[(n, planner)]
        done = [r for r in rows if r and r["round"] in reference]
        if not done:
            print(f"| x{n} | {planner} | | | | | | | 0/{len(rows)} |")
            continue
        msr = [1 - r["peak"] / reference[r["round"]]["peak"] for r in done]
        eor = [statistics.mean(s / v for s, v in zip(r["seconds"], reference[r["round"]]["seconds"]))
               - 1 for r in done]
        eor_median = median(eor)
        msr_median = median(msr)
        cbr = msr_median / eor_median if eor_median > 0 else float("inf")
        vanilla = median([reference[r["round"]]["peak"] for r in done]) / 2**20
        planned = median([r["peak"] for r in done]) / 2**20
        swapped = median([r["swapped"] for r in done]) / 2**20
        print(f"| x{n} | {planner} | {vanilla:.1f} | {planned:.1f} | {msr_median:.3f}{spread(msr)} "
              f"| {eor_median:.3f}{spread(eor)} | {cbr:.2f} | {swapped:.1f} "
              f"| {len(done)}/{len(rows)} |")
