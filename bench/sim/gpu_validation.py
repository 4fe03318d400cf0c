#!/usr/bin/env python3
"""The simulator against a real GPU (issue 22's GPU validation; scripts/gpu-check.sh runs it).

For two models of the zoo, two identical training jobs on one device: solo (policy exclusive:
one job after the other, each job's samples/s is its solo throughput), one after another
(temporal) and side by side (spatial), trained by `tandem run` ROUNDS times interleaved
(medians), against `tandem sim` of the same workload on the GPU spec closest to the device.
Prints, per model, the measured and simulated solo samples/s and the side-by-side gain over
temporal, with the errors (targets: 10% on solo throughput, 0.1x on the ratio).

    bench/sim/gpu_validation.py BUILD_DIR [--device cuda|cpu] [--spec SPEC] [--rounds N]
                                [--iterations N] [--sim-only]

--device cpu trains on the CPU backend instead (the comparison is then meaningless, but every
step runs: how this script is tested without a GPU). --sim-only prints the simulator's side
alone. --spec defaults to the spec nvidia-smi's GPU name suggests (v100 when none matches).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from workload_file import write_workload

# (model, batch, model_options): a convolutional network that fills a GPU and a recurrent one
# whose small step GEMMs do not.
MODELS = [("resnet56", 128, {"image_side": 32}), ("lstm", 64, {})]
POLICIES = ["exclusive", "temporal", "spatial"]
# nvidia-smi names to the simulator's specs (docs/sim-models.md, "GPU specs").
SPECS = [("H100", "h100"), ("H200", "h100"), ("A100-SXM4-80GB", "a100-80gb"),
         ("A100 80GB", "a100-80gb"), ("A100", "a100"), ("V100", "v100"), ("P100", "p100"),
         ("2080 Ti", "2080ti")]


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build", nargs="?", default="build")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--spec", default=None)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--sim-only", action="store_true")
    return p.parse_args()


def guess_spec():
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                               capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "v100", "no nvidia-smi"
    first = names.strip().splitlines()[0] if names.strip() else ""
    for part, spec in SPECS:
        if part.lower() in first.lower():
            return spec, first
    return "v100", first or "no GPU listed"


def workload(directory, model, batch, options, device, iterations):
    if device == "cuda":
        table = {"kind": "cuda", "capacity": "16GiB"}
    else:
        table = {"capacity": "4GiB", "copy_bandwidth": "memcpy"}
    jobs = [{"name": name, "model": model, "batch_size": batch, "iterations": iterations,
             "threads": 1, "model_options": options} for name in "ab"]
    return write_workload(os.path.join(directory, f"{model}.toml"), "temporal", jobs, table)


def figures(results):
    """(solo samples/s of one job, spatial / temporal) from {policy: results JSON}."""
    solo = results["exclusive"]["jobs"][0]["samples_per_s"]
    ratio = (results["spatial"]["aggregate_samples_per_s"] /
             results["temporal"]["aggregate_samples_per_s"])
    return solo, ratio


def simulate(tandem, path, spec, directory):
    out = os.path.join(directory, "sim.json")
    subprocess.run([tandem, "sim", path, "--gpu", spec, "--compare", ",".join(POLICIES),
                    "--json", out], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return figures({r["policy"]: r for r in json.load(f)})


def measure(tandem, path, rounds, directory):
    """Medians over interleaved rounds of every policy."""
    solos, ratios = [], []
    for _ in range(rounds):
        results = {}
        for policy in POLICIES:
            out = os.path.join(directory, f"{policy}.json")
            run = subprocess.run([tandem, "run", path, "--policy", policy, "--quiet",
                                  "--json", out], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            if run.returncode != 0:
                sys.exit(f"gpu_validation: tandem run {path} --policy {policy} failed "
                         f"(exit {run.returncode}):\n{run.stderr}")
            with open(out) as f:
                results[policy] = json.load(f)
        solo, ratio = figures(results)
        solos.append(solo)
        ratios.append(ratio)
    return statistics.median(solos), statistics.median(ratios)


def main():
    args = parse()
    tandem = os.path.join(args.build, "src", "tandem")
    if not os.access(tandem, os.X_OK):
        sys.exit(f"gpu_validation: {tandem} not found; build first")
    spec, seen = (args.spec, "given") if args.spec else guess_spec()
    directory = tempfile.mkdtemp(prefix="tandem-gpu-validation-")
    print(f"device {args.device} ({seen}); simulated spec {spec}; "
          f"{args.rounds} interleaved rounds, medians")
    header = ["model", "solo samples/s real", "sim", "error",
              "side by side / one after another real", "sim", "error"]
    rows = [header]
    for model, batch, options in MODELS:
        path = workload(directory, model, batch, options, args.device, args.iterations)
        sim_solo, sim_ratio = simulate(tandem, path, spec, directory)
        label = f"{model} b{batch}"
        if args.sim_only:
            rows.append([label, "-", f"{sim_solo:.1f}", "-", "-", f"{sim_ratio:.2f}x", "-"])
            continue
        solo, ratio = measure(tandem, path, args.rounds, directory)
        rows.append([label, f"{solo:.1f}", f"{sim_solo:.1f}", f"{(sim_solo - solo) / solo:+.1%}",
                     f"{ratio:.2f}x", f"{sim_ratio:.2f}x", f"{sim_ratio - ratio:+.2f}x"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in [rows[0], ["-" * w for w in widths]] + rows[1:]:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
