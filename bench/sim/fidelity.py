#!/usr/bin/env python3
"""Prints real vs simulated results found in a directory of NAME.POLICY.ROUND.{real,sim}.json
files (bench/sim/fidelity.sh writes them): per workload and policy, the medians over rounds of
aggregate samples/s, makespan and peak regions held, real and simulated, the simulator's relative
error on each median, the spread of the real runs (min-max around the median), and failed jobs."""
import collections
import json
import pathlib
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def error(sim, real):
    return (sim - real) / real * 100 if real else 0.0


def spread(values):
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle * 100 if middle else 0.0


METRICS = ("aggregate_samples_per_s", "makespan_s", "peak_reserved_bytes")


def main(directory):
    cases = collections.defaultdict(lambda: {"real": [], "sim": []})
    for path in sorted(pathlib.Path(directory).glob("*.json")):
        parts = path.name.split(".")
        if len(parts) != 5 or parts[3] not in ("real", "sim"):
            continue  # profiles
        workload, policy, _round, side, _ = parts
        cases[(workload, policy)][side].append(load(path))
    print(f"{'workload':<22}{'policy':<10}{'rounds':>7}{'samples/s real':>15}{'sim':>9}{'err':>8}"
          f"{'makespan real':>15}{'sim':>9}{'err':>8}{'peak held real':>16}{'sim':>9}{'err':>8}"
          f"{'real spread':>12}{'failed r/s':>11}")
    worst = 0.0
    mib = 1 << 20
    for (workload, policy), runs in sorted(cases.items()):
        real = {m: statistics.median(r[m] for r in runs["real"]) for m in METRICS}
        sim = {m: statistics.median(r[m] for r in runs["sim"]) for m in METRICS}
        errors = [error(sim[m], real[m]) for m in METRICS]
        noise = spread([r["aggregate_samples_per_s"] for r in runs["real"]])
        failed_real = max(r["failed_jobs"] for r in runs["real"])
        failed_sim = max(r["failed_jobs"] for r in runs["sim"])
        if failed_real == failed_sim == 0:
            worst = max(worst, *(abs(e) for e in errors))
        print(f"{workload:<22}{policy:<10}{len(runs['real']):>7}"
              f"{real['aggregate_samples_per_s']:>15.1f}{sim['aggregate_samples_per_s']:>9.1f}"
              f"{errors[0]:>7.1f}%"
              f"{real['makespan_s']:>14.2f}s{sim['makespan_s']:>8.2f}s{errors[1]:>7.1f}%"
              f"{real['peak_reserved_bytes'] / mib:>12.0f} MiB"
              f"{sim['peak_reserved_bytes'] / mib:>5.0f} MiB{errors[2]:>7.1f}%"
              f"{noise:>11.1f}%{failed_real:>7}/{failed_sim}")
    print(f"worst absolute error of the medians over cases where no job failed: {worst:.1f}%")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
