#!/usr/bin/env python3
"""Prints Salus Table 2 rows (makespan, average queuing, average and 95th-percentile JCT) from
`tandem run --json` / `tandem sim --json` files, one row per policy, medians over the files given
for it, with the average-JCT and makespan ratios against the first policy.

    report.py --unit s|min POLICY=FILE[,FILE...] ...
    report.py --latency FILE [--bound-ms 50] [--max-wait-s 1]
                                 (an inference run: exit 0 when every model was admitted at
                                 once and served with its p95 latency within the bound)
"""
import argparse
import json
import statistics


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data if isinstance(data, list) else [data]


def table(args):
    scale = 60.0 if args.unit == "min" else 1.0
    rows = []
    for spec in args.runs:
        policy, files = spec.split("=", 1)
        results = [r for path in files.split(",") for r in load(path)]
        med = lambda key: statistics.median(r[key] for r in results)
        switches = [r["switches"] for r in results if r.get("switches", {}).get("count")]
        switch = (f"{statistics.median(x['p50_s'] for x in switches) * 1e3:.3f}/"
                  f"{statistics.median(x['p95_s'] for x in switches) * 1e3:.3f} ms"
                  if switches else "-")
        rows.append((policy, med("makespan_s"), med("mean_queuing_s"), med("mean_jct_s"),
                     med("p95_jct_s"), sum(r["failed_jobs"] for r in results), len(results),
                     switch))
    base = rows[0]
    print(f"{'policy':<8}{'makespan':>12}{'avg queuing':>14}{'avg JCT':>12}{'95% JCT':>12}"
          f"{'JCT ratio':>11}{'makespan ratio':>16}{'failed':>8}{'runs':>6}"
          "  switch p50/p95")
    for policy, makespan, queuing, jct, p95, failed, runs, switch in rows:
        print(f"{policy:<8}{makespan / scale:>11.1f}{args.unit[0]}{queuing / scale:>13.1f}"
              f"{args.unit[0]}{jct / scale:>11.1f}{args.unit[0]}{p95 / scale:>11.1f}{args.unit[0]}"
              f"{base[3] / jct if jct > 0 else 0:>10.2f}x{base[1] / makespan if makespan else 0:>15.2f}x"
              f"{failed:>8}{runs:>6}  {switch}")


def latency(args):
    """One line per inference run; exit status 0 when every model was served within the bound:
    none failed, each was admitted within --max-wait-s of its arrival (all live together) and
    every model's p95 latency is at most --bound-ms."""
    within = True
    for result in load(args.latency):
        jobs = result["jobs"]
        served = [j for j in jobs if j.get("latency")]
        waits = [j["first_start_s"] - j["setup_s"] - j["arrival_s"] for j in served]
        # The most models live at once: their spans from going live to their last request.
        edges = sorted([(j["first_start_s"], 1) for j in served] + [(j["end_s"], -1) for j in served])
        live = most = 0
        for _, step in edges:
            live += step
            most = max(most, live)
        p95 = max([j["latency"]["p95_s"] for j in served] or [float("inf")])
        print(f"models {len(jobs)}  live together {most}  failed {result['failed_jobs']}  "
              f"longest admission wait {max(waits or [0]):.2f} s  worst p50 "
              f"{max([j['latency']['p50_s'] for j in served] or [0]) * 1e3:.1f} ms  worst p95 "
              f"{p95 * 1e3:.1f} ms  worst p99 "
              f"{max([j['latency']['p99_s'] for j in served] or [0]) * 1e3:.1f} ms  peak held "
              f"{result['peak_reserved_bytes'] / 2**20:.0f} MiB of {result['budget_bytes'] / 2**20:.0f} MiB")
        within = within and result["failed_jobs"] == 0 and len(served) == len(jobs) and \
            max(waits or [0]) <= args.max_wait_s and p95 * 1e3 <= args.bound_ms
    return 0 if within else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--unit", choices=["s", "min"], default="s")
    parser.add_argument("--latency")
    parser.add_argument("--bound-ms", type=float, default=50.0)
    parser.add_argument("--max-wait-s", type=float, default=1.0)
    parser.add_argument("runs", nargs="*")
    args = parser.parse_args()
    if args.latency:
        return latency(args)
    table(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
