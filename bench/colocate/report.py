"""Tables for bench/colocate/colocate.sh: medians over rounds, ratios to temporal, overlap,
and optionally one policy's memory timeline drawn as bars (regions held per job)."""
import csv
import json
import statistics
import sys


def overlap_fraction(run):
    """Share of the makespan during which two or more jobs were mid-iteration."""
    edges = []
    for job in run["jobs"]:
        for it in job["iteration_log"]:
            edges += [(it["start_s"], 1), (it["end_s"], -1)]
    edges.sort()
    running, last, shared = 0, 0.0, 0.0
    for time, step in edges:
        if running >= 2:
            shared += time - last
        running, last = running + step, time
    return shared / run["makespan_s"] if run["makespan_s"] > 0 else 0.0


def summary(work, repeat, policy):
    runs = [json.load(open(f"{work}/{policy}-{r}.json")) for r in range(1, repeat + 1)]
    failures = [f"{j['name']}: {j['error'].splitlines()[0]}" for r in runs for j in r["jobs"]
                if j["status"] == "failed"]
    return {
        "failures": failures,
        "failed_rounds": sum(1 for r in runs if r["failed_jobs"]),
        "samples": statistics.median(r["aggregate_samples_per_s"] for r in runs),
        "makespan": statistics.median(r["makespan_s"] for r in runs),
        "peak": statistics.median(r["peak_reserved_bytes"] for r in runs) / 2**20,
        "budget": runs[0]["budget_bytes"] / 2**20,
        "overlap": statistics.median(overlap_fraction(r) for r in runs),
        "jobs": {j["name"]: statistics.median(
            next(x for x in r["jobs"] if x["name"] == j["name"])["samples_per_s"] for r in runs)
            for j in runs[0]["jobs"]},
    }


def draw_timeline(work, repeat, policy, width=60, rows=40):
    """Regions held per job, sampled evenly over a window in the middle of the run."""
    run = json.load(open(f"{work}/{policy}-{repeat}.json"))
    held, samples = {}, []
    with open(f"{work}/timeline.csv") as f:
        events = [(float(r["time_s"]), r["job"], int(r["reserved_bytes"])) for r in csv.DictReader(f)]
    names = [j["name"] for j in run["jobs"]]
    iteration = statistics.median(it["end_s"] - it["start_s"] for j in run["jobs"]
                                  for it in j["iteration_log"]) if events else 0
    start = run["makespan_s"] / 2
    step = 4 * iteration / rows if iteration > 0 else 0.01
    next_sample, i = start, 0
    while len(samples) < rows:
        while i < len(events) and events[i][0] <= next_sample:
            held[events[i][1]] = events[i][2]
            i += 1
        samples.append((next_sample, [held.get(n, 0) for n in names]))
        next_sample += step
    budget = run["budget_bytes"]
    print(f"\n{policy}: regions held per job over time (run {repeat}, from {start:.2f} s, "
          f"one row per {step * 1000:.0f} ms; a full bar is the budget, {budget / 2**20:.0f} MiB)")
    column = width // len(names)
    print(f"{'time s':>7}  " + "".join(f"{n:<{column}}" for n in names) + "total")
    for time, values in samples:
        bars = "".join(f"{'#' * round(v / budget * (column - 2)):<{column}}" for v in values)
        print(f"{time:7.3f}  {bars}{sum(values) / 2**20:5.0f} MiB")


def main():
    work, repeat, timeline_policy, policies = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    rows = {policy: summary(work, repeat, policy) for policy in policies}
    base = rows["temporal"]["samples"] if "temporal" in rows and not rows["temporal"]["failures"] else None
    names = list(rows[policies[0]]["jobs"])
    print(f"median of {repeat} interleaved rounds; aggregate = all samples / makespan; "
          f"overlap = share of the makespan with two or more jobs mid-iteration")
    print(f"{'policy':<10} {'aggregate samples/s':>20} {'vs temporal':>12} {'makespan s':>11} "
          f"{'peak held MiB':>14} {'budget MiB':>11} {'overlap':>8} " +
          " ".join(f"{n + ' samples/s':>18}" for n in names))
    for policy, row in rows.items():
        ratio = f"{row['samples'] / base:>11.2f}x" if base else f"{'-':>12}"
        print(f"{policy:<10} {row['samples']:>20.1f} {ratio} {row['makespan']:>11.2f} "
              f"{row['peak']:>14.0f} {row['budget']:>11.0f} {row['overlap']:>8.0%} " +
              " ".join(f"{row['jobs'][n]:>18.1f}" for n in names))
    for policy, row in rows.items():
        if row["failures"]:
            print(f"{policy}: a job failed in {row['failed_rounds']} of {repeat} rounds; "
                  f"{row['failures'][0]}")
    if timeline_policy != "-":
        draw_timeline(work, repeat, timeline_policy)


main()
