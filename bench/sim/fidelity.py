#!/usr/bin/env python3
"""Prints real vs simulated results found in a directory of NAME.POLICY.{real,sim}.json files
(bench/sim/fidelity.sh writes them): aggregate samples/s, makespan, peak regions held, failed
jobs, and the simulator's relative error on each."""
import json
import pathlib
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def error(sim, real):
    return (sim - real) / real * 100 if real else 0.0


def main(directory):
    rows = []
    for real_path in sorted(pathlib.Path(directory).glob("*.real.json")):
        stem = real_path.name[: -len(".real.json")]
        workload, policy = stem.rsplit(".", 1)
        real = load(real_path)
        sim = load(real_path.with_name(stem + ".sim.json"))
        rows.append((workload, policy, real, sim))
    header = (f"{'workload':<22}{'policy':<10}{'samples/s real':>15}{'sim':>9}{'err':>8}"
              f"{'makespan real':>15}{'sim':>9}{'err':>8}{'peak held real':>16}{'sim':>9}"
              f"{'err':>8}{'failed r/s':>11}")
    print(header)
    worst = 0.0
    for workload, policy, real, sim in rows:
        system_real, system_sim = real, sim
        errors = [
            error(system_sim["aggregate_samples_per_s"], system_real["aggregate_samples_per_s"]),
            error(system_sim["makespan_s"], system_real["makespan_s"]),
            error(system_sim["peak_reserved_bytes"], system_real["peak_reserved_bytes"]),
        ]
        failed_real, failed_sim = real["failed_jobs"], sim["failed_jobs"]
        if failed_real == failed_sim == 0:
            worst = max(worst, *(abs(e) for e in errors))
        mib = 1 << 20
        print(f"{workload:<22}{policy:<10}"
              f"{system_real['aggregate_samples_per_s']:>15.1f}"
              f"{system_sim['aggregate_samples_per_s']:>9.1f}{errors[0]:>7.1f}%"
              f"{system_real['makespan_s']:>14.2f}s{system_sim['makespan_s']:>8.2f}s{errors[1]:>7.1f}%"
              f"{system_real['peak_reserved_bytes'] / mib:>12.0f} MiB"
              f"{system_sim['peak_reserved_bytes'] / mib:>5.0f} MiB{errors[2]:>7.1f}%"
              f"{failed_real:>7}/{failed_sim}")
    print(f"worst absolute error over runs where no job failed: {worst:.1f}%")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
