#!/usr/bin/env python3
"""Prints Salus Table 2 rows (makespan, average queuing, average and 95th-percentile JCT) from
`tandem run --json` / `tandem sim --json` files, one row per policy, medians over the files given
for it, with the average-JCT and makespan ratios against the first policy.

    report.py --unit s|min POLICY=FILE[,FILE...] ...
    report.py --latency FILE     (per-model request latencies of an inference run)
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
    for result in load(args.latency):
        served = [j for j in result["jobs"] if j.get("latency")]
        p95s = [j["latency"]["p95_s"] for j in served]
        print(f"models {len(result['jobs'])}  completed {len(served)}  failed "
              f"{result['failed_jobs']}  worst p50 {max(j['latency']['p50_s'] for j in served) * 1e3:.1f} ms"
              f"  worst p95 {max(p95s) * 1e3:.1f} ms  worst p99 "
              f"{max(j['latency']['p99_s'] for j in served) * 1e3:.1f} ms  peak held "
              f"{result['peak_reserved_bytes'] / 2**20:.0f} MiB of {result['budget_bytes'] / 2**20:.0f} MiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--unit", choices=["s", "min"], default="s")
    parser.add_argument("--latency")
    parser.add_argument("runs", nargs="*")
    args = parser.parse_args()
    if args.latency:
        latency(args)
    else:
        table(args)


if __name__ == "__main__":
    main()
