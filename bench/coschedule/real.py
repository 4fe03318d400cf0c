#!/usr/bin/env python3
"""Co-scheduling and footprint reduction together on real jobs (issue 19), CPU backend.

Two ResNet-20 at batch 64 (examples/scrooge_two_resnets.toml; about 104 MiB of regions each at
their peaks) at budgets of 157, 120 and 90 MiB (the issue's; 90 MiB is below one job's peak),
and a three-model mix (bench/coschedule/mix.toml; 434 MiB of peaks) at 300 and 260 MiB, each
under temporal, scrooge, nodegroup, and scrooge and nodegroup choosing tensile's plans
(--policy-planner tensile), scrooge also with weigh_waiting = 1 in a copy of the workload.
REPEAT rounds, interleaved (every configuration once per round), and the median of each
configuration's aggregate samples/s, against temporal's median; a run in which a job failed
still counts (its samples/s are what the others trained), and the table shows the most jobs
failed in any run. ITERATIONS (environment) sets every job's iterations (default:
the workloads' own, 40 and 15-30).

  bench/coschedule/real.py [BUILD_DIR] [REPEAT]     (default: build 3)
"""
import re
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else 3
TANDEM = os.path.join(ROOT, BUILD, "src", "tandem")

ITERATIONS = os.environ.get("ITERATIONS")
CASES = [("two resnet20 b64", "examples/scrooge_two_resnets.toml", b)
         for b in ("157MiB", "120MiB", "90MiB")]
CASES += [("resnet20 + mobilenetv2 + vgg16", "bench/coschedule/mix.toml", b)
          for b in ("300MiB", "260MiB")]
POLICIES = [("temporal", ["--policy", "temporal"]),
            ("scrooge", ["--policy", "scrooge", "--policy-planner", "none"]),
            ("scrooge+tensile", ["--policy", "scrooge", "--policy-planner", "tensile"]),
            ("scrooge-weigh+tensile", ["--policy", "scrooge", "--policy-planner", "tensile"]),
            ("nodegroup", ["--policy", "nodegroup", "--policy-planner", "none"]),
            ("nodegroup+tensile", ["--policy", "nodegroup", "--policy-planner", "tensile"])]


def with_iterations(workload, work):
    """The workload, or a copy of it with every job's iterations set to ITERATIONS."""
    if not ITERATIONS:
        return workload
    with open(os.path.join(ROOT, workload)) as f:
        text = re.sub(r"(?m)^iterations = \d+", f"iterations = {int(ITERATIONS)}", f.read())
    copy = os.path.join(work, os.path.basename(workload))
    with open(copy, "w") as f:
        f.write(text)
    return copy


def weighing(workload, work):
    """A copy of the workload whose scrooge weighs waits (weigh_waiting = 1)."""
    with open(os.path.join(ROOT, workload)) as f:
        text = f.read()
    # The option is scrooge's, and a --policy naming another than the file's ignores it.
    assert re.search(r'(?m)^\[policy\]\nname = "scrooge"', text), \
        workload + ": [policy] must name scrooge"
    copy = os.path.join(work, "weigh-" + os.path.basename(workload))
    with open(copy, "w") as f:
        f.write(text.replace("[policy]\n", "[policy]\nweigh_waiting = 1\n", 1))
    return copy


def run(workload, budget, args, work):
    out = os.path.join(work, "run.json")
    if os.path.exists(out):
        os.remove(out)
    subprocess.run([TANDEM, "run", workload, "--budget", budget, "--quiet", "--json", out] + args,
                   cwd=ROOT, capture_output=True, text=True)
    if not os.path.exists(out):  # refused or crashed: no results written
        return None
    with open(out) as f:
        result = json.load(f)
    stats = result.get("policy_stats") or {}
    return {"samples": result["aggregate_samples_per_s"], "failed": result["failed_jobs"],
            "held": result["peak_reserved_bytes"] <= result["budget_bytes"],
            "planned": stats.get("planned")}


def main():
    if not os.access(TANDEM, os.X_OK):
        sys.exit(f"real.py: {TANDEM} not found; build tandem first")
    samples = {}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(REPEAT):
            for label, workload, budget in CASES:
                for name, args in POLICIES:
                    file = with_iterations(workload, work)
                    if name.startswith("scrooge-weigh"):
                        file = weighing(file, work)
                    got = run(file, budget, args, work)
                    samples.setdefault((label, budget, name), []).append(got)
    print(f"Median of {REPEAT} interleaved runs: aggregate samples/s (x temporal's median); "
          "jobs failed; budget held in every run; iterations under a plan (median)")
    print("| jobs | budget | " + " | ".join(n for n, _ in POLICIES) + " |")
    print("|---|---|" + "---|" * len(POLICIES))
    for label, workload, budget in CASES:
        cells = []
        base = None
        for name, _ in POLICIES:
            runs = [r for r in samples[(label, budget, name)] if r is not None]
            if not runs:
                cells.append("error")
                continue
            median = statistics.median(r["samples"] for r in runs)
            if name == "temporal":
                base = median
            failed = max(r["failed"] for r in runs)
            held = all(r["held"] for r in runs)
            planned = [r["planned"] for r in runs if r["planned"] is not None]
            cell = f"{median:.1f}" + (f" ({median / base:.2f}x)" if base else "")
            cell += f", failed {failed}" + ("" if held else ", BUDGET EXCEEDED")
            if planned:
                cell += f", planned {statistics.median(planned):.0f}"
            cells.append(cell)
        print(f"| {label} | {budget} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
