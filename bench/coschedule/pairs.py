#!/usr/bin/env python3
"""Co-scheduling and footprint reduction together (issue 19), simulated at paper scale.

For two identical GNMT at batch 192 on an RTX 2080 Ti and every pair of examples/paper/ at its
largest batch (table 1, the GPU's whole memory as the budget), and for the same pairs at a
smaller batch where sharing the device pays, under a budget of 1.25x the larger job's peak alone
(table 2: each job alone is near the budget), runs side by side in one invocation, each from the
same generated profiles:
  temporal, scrooge, nodegroup         (no plans)
  planned+spatial                      (each job planned alone for its share, then all at once)
  scrooge+PLANNER                      (scrooge choosing, at each start, a delay or a plan)
  scrooge-weigh+PLANNER                (the same with weigh_waiting = 1: a start also pays the
                                        delay it leaves the job next in line, by the share of
                                        the device the two were measured to leave each other)
  nodegroup+PLANNER                    (nodegroup running a plan where a job would run alone
                                        or wait)
and, as the ceiling of the simulator's compute model, spatial sharing on the same GPU given
1 TiB of memory (`--gpu-memory`): every job runs side by side from the start, limited by
compute only,
and prints each policy's normalized throughput (Zico's: the sum over the jobs of the samples each
trained per second of the run's makespan against its samples/s alone, from an `exclusive` run of
the same jobs; one job at a time comes to about 1), against temporal's, and the three combined
policies' against the best of the others. A run that fails a job counts as no throughput ('-').
The simulator is deterministic, so one run of each is the figure.

  bench/coschedule/pairs.py [BUILD_DIR] [PLANNER ...]     (default: build tensile capuchin)
"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
PLANNERS = sys.argv[2:] or ["tensile", "capuchin"]
TANDEM = os.path.join(ROOT, BUILD, "src", "tandem")

# (label, workload, gpu, batch): the largest batch of each pair's own sweep; distinct pairs as
# their files have them.
CASES = [
    ("gnmt x2 b192", "examples/paper/same_gnmt.toml", "2080ti", 192),
    ("gnmt x2 b128", "examples/paper/same_gnmt.toml", "2080ti", 128),
    ("nasnet x2 b64", "examples/paper/same_nasnet.toml", "2080ti", 64),
    ("resnet110 x2 b768", "examples/paper/same_resnet110.toml", "2080ti", 768),
    ("rhn x2 b768", "examples/paper/same_rhn.toml", "2080ti", 768),
    ("resnet50 x2 b256", "examples/paper/same_resnet50.toml", "v100", 256),
    ("bert_base x2 b128", "examples/paper/same_bert_base.toml", "v100", 128),
    ("bert_base + gnmt", "examples/paper/bert_gnmt.toml", "2080ti", None),
    ("nasnet + gnmt", "examples/paper/nasnet_gnmt.toml", "2080ti", None),
    ("nasnet + resnet110", "examples/paper/nasnet_resnet110.toml", "2080ti", None),
    ("rhn + gnmt", "examples/paper/rhn_gnmt.toml", "2080ti", None),
]


# (label, workload, gpu, batch) for table 2.
TIGHT_CASES = [
    ("gnmt x2 b64", "examples/paper/same_gnmt.toml", "2080ti", 64),
    ("gnmt x2 b96", "examples/paper/same_gnmt.toml", "2080ti", 96),
    ("nasnet x2 b16", "examples/paper/same_nasnet.toml", "2080ti", 16),
    ("resnet110 x2 b128", "examples/paper/same_resnet110.toml", "2080ti", 128),
    ("rhn x2 b128", "examples/paper/same_rhn.toml", "2080ti", 128),
    ("resnet50 x2 b64", "examples/paper/same_resnet50.toml", "v100", 64),
    ("bert_base x2 b16", "examples/paper/same_bert_base.toml", "v100", 16),
    ("bert_base + gnmt", "examples/paper/bert_gnmt.toml", "2080ti", None),
    ("nasnet + gnmt", "examples/paper/nasnet_gnmt.toml", "2080ti", None),
    ("nasnet + resnet110", "examples/paper/nasnet_resnet110.toml", "2080ti", None),
    ("rhn + gnmt", "examples/paper/rhn_gnmt.toml", "2080ti", None),
]
TIGHT_FACTOR = 1.25
CEILING = "ceiling (no memory limit)"


def simulate(workload, gpu, batch, args, work):
    out = tempfile.NamedTemporaryFile(dir=work, suffix=".json", delete=False).name
    command = [TANDEM, "sim", workload, "--gpu", gpu, "--json", out] + args
    if batch:
        command += ["--sweep-batch", str(batch)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
    with open(out) as f:
        results = json.load(f)
    results = results if isinstance(results, list) else [results]
    return results, None


def weighing(workload, work):
    """A copy of the workload whose scrooge weighs the job next in line (weigh_waiting = 1)."""
    with open(os.path.join(ROOT, workload)) as f:
        text = f.read()
    # The option is scrooge's, and a --policy naming another than the file's ignores it.
    assert "[policy]\nname = \"scrooge\"\n" in text, workload + ": [policy] must name scrooge"
    copy = tempfile.NamedTemporaryFile(dir=work, suffix=".toml", delete=False, mode="w")
    with copy:
        copy.write(text.replace("[policy]\n", "[policy]\nweigh_waiting = 1\n", 1))
    return copy.name


def figure(result, solo):
    """Normalized throughput; None when a job failed (its work was not done)."""
    if result is None or solo is None or result["failed_jobs"] > 0:
        return None
    return sum(job["iterations"] * job["batch_size"] / result["makespan_s"] / solo[job["name"]]
               for job in result["jobs"])


def planned_iterations(result):
    """Iterations run under a plan: scrooge counts them system-wide, nodegroup per job."""
    if "planned" in result["policy_stats"]:
        return result["policy_stats"]["planned"]
    return sum(job.get("policy_stats", {}).get("planned", 0) for job in result["jobs"])


def run_case(case, work, tight):
    label, workload, gpu, batch = case
    columns = {}
    budget = []
    if tight:
        alone, error = simulate(workload, gpu, batch, ["--policy", "exclusive"], work)
        if alone is None:
            return label, gpu, None, error
        peak = max(job["peak_reserved_bytes"] for job in alone[0]["jobs"])
        budget = ["--budget", str(int(TIGHT_FACTOR * peak))]
        label += f" at {TIGHT_FACTOR * peak / 2**30:.2f} GiB"
    base, error = simulate(workload, gpu, batch,
                           ["--compare", "exclusive,temporal,scrooge,nodegroup"] + budget, work)
    if base is None:
        return label, gpu, None, error
    solo = {job["name"]: job["samples_per_s"] for job in base[0]["jobs"]}
    for name, result in zip(["temporal", "scrooge", "nodegroup"], base[1:]):
        columns[name] = figure(result, solo)
    unlimited, _ = simulate(workload, gpu, batch, ["--policy", "spatial", "--gpu-memory",
                                                    "1TiB", "--budget", "1TiB"], work)
    columns[CEILING] = figure(unlimited[0], solo) if unlimited else None
    for planner in PLANNERS:
        planned, _ = simulate(workload, gpu, batch,
                              ["--policy", "spatial", "--planner", planner] + budget, work)
        columns[f"planned+spatial ({planner})"] = figure(planned[0], solo) if planned else None
        for policy in ("scrooge", "nodegroup", "scrooge-weigh"):
            file = weighing(workload, work) if policy == "scrooge-weigh" else workload
            chosen, _ = simulate(file, gpu, batch, ["--policy", policy.split("-")[0],
                                                    "--policy-planner", planner] + budget, work)
            columns[f"{policy}+{planner}"] = figure(chosen[0], solo) if chosen else None
            columns[f"{policy}+{planner} planned"] = (
                planned_iterations(chosen[0]) if chosen else None)
    return label, gpu, columns, None


def print_table(title, rows):
    others = ["temporal", "scrooge", "nodegroup"] + [f"planned+spatial ({p})" for p in PLANNERS]
    combined = [f"{policy}+{p}" for p in PLANNERS
                for policy in ("scrooge", "nodegroup", "scrooge-weigh")]
    print(title)
    header = ["pair", "gpu"] + others + combined + ["best other"] + [
        f"{c} / best other" for c in combined] + [f"{c}: planned iterations" for c in combined] + [
        CEILING]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for label, gpu, columns, error in rows:
        if columns is None:
            print(f"| {label} | {gpu} | {error} |")
            continue
        temporal = columns["temporal"]

        def cell(value):
            if value is None:
                return "-"
            return f"{value:.2f} ({value / temporal:.2f}x)" if temporal else f"{value:.2f}"

        best = max((columns[o] for o in others if columns[o] is not None), default=None)
        cells = [label, gpu] + [cell(columns[o]) for o in others + combined] + [cell(best)]
        for c in combined:
            cells.append(f"{columns[c] / best:.2f}x" if columns[c] and best else "-")
        for c in combined:
            value = columns[f"{c} planned"]
            cells.append("-" if value is None else str(int(value)))
        cells.append(cell(columns[CEILING]))
        print("| " + " | ".join(cells) + " |")
    print()


def main():
    if not os.access(TANDEM, os.X_OK):
        sys.exit(f"pairs.py: {TANDEM} not found; build tandem first")
    with tempfile.TemporaryDirectory() as work, ThreadPoolExecutor(2) as pool:
        whole = list(pool.map(lambda case: run_case(case, work, False), CASES))
        tight = list(pool.map(lambda case: run_case(case, work, True), TIGHT_CASES))
    note = ("Normalized throughput (in brackets: x temporal's); '-': a job failed. Best other: "
            "the best of the policies without the combined decision.")
    print_table("Table 1: the largest batches, the GPU's memory as the budget. " + note, whole)
    print_table(f"Table 2: budget {TIGHT_FACTOR}x the larger job's peak alone. " + note, tight)


if __name__ == "__main__":
    main()
