#!/usr/bin/env python3
"""Turns tandem_memory_bench's JSON (with repetitions) into plain-text tables of medians.

Usage: report_table.py results.json   (standard library only)
"""
import json
import sys

ALLOCATORS = ["tandem", "tandem_2MiB", "glibc", "jemalloc", "mimalloc", "first_fit"]
BASELINES = ["glibc", "jemalloc", "mimalloc", "first_fit"]
FRAGMENTATION = ["tandem", "tandem_2MiB", "first_fit"]
FAMILY_ORDER = {"trace": 0, "random": 1, "latency": 2}


def size_text(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def workload_of(run):
    """(sort key, label, allocator) from a run name such as latency/glibc/4096/real_time/threads:2."""
    parts = run["run_name"].split("/")
    family, allocator = parts[0], parts[1]
    arg = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0
    threads = int(run.get("threads", 1))
    if family == "trace":
        label = f"trace: ResNet-50-like, batch {arg}"
    elif family == "random":
        label = f"random: 1 KiB-{size_text(arg)}, 2 GiB cap"
    else:
        label = f"latency: {size_text(arg)}, {threads} thread{'s' if threads > 1 else ''}"
    return (FAMILY_ORDER.get(family, 9), threads, arg, label), label, allocator


def cell(value, digits=1, width=11):
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def main():
    with open(sys.argv[1]) as f:
        runs = json.load(f)["benchmarks"]
    rows = {}  # sort key -> {allocator: (ns_per_op, fragmentation)}
    for run in runs:
        if run.get("aggregate_name") != "median" or run.get("error_occurred"):
            continue
        key, _, allocator = workload_of(run)
        rows.setdefault(key, {})[allocator] = (run.get("ns_per_op"), run.get("fragmentation"))
    if not rows:
        sys.exit("report_table.py: no median aggregates in the input (run with repetitions)")
    keys = sorted(rows)
    width = max(len(k[3]) for k in keys) + 2

    print("ns per operation, median of the repetitions (trace, random: per alloc or free;")
    print("latency: per alloc+free pair, as each thread sees it)")
    print(f"{'workload':<{width}}" + "".join(f"{a:>12}" for a in ALLOCATORS))
    for key in keys:
        row = rows[key]
        print(f"{key[3]:<{width}}" +
              "".join(" " + cell(row.get(a, (None, None))[0]) for a in ALLOCATORS))

    print()
    print("baseline / tandem time (> 1: tandem is faster); fragmentation = reserved / live at")
    print("the live peak (tandem: pool reserved bytes; first_fit: highest end offset used)")
    header = "".join(f"{a + '/t':>12}" for a in BASELINES)
    header += "".join(f"{'frag ' + a:>17}" for a in FRAGMENTATION)
    print(f"{'workload':<{width}}" + header)
    for key in keys:
        row = rows[key]
        tandem = row.get("tandem", (None, None))[0]
        ratios = []
        for a in BASELINES:
            base = row.get(a, (None, None))[0]
            ratios.append(None if not tandem or base is None else base / tandem)
        frags = [row.get(a, (None, None))[1] for a in FRAGMENTATION]
        print(f"{key[3]:<{width}}" + "".join(" " + cell(r, 2) for r in ratios) +
              "".join(" " + cell(fr, 3, 16) for fr in frags))

    trace = next((rows[k] for k in keys if k[0] == FAMILY_ORDER["trace"]), None)
    if trace and "tandem" in trace:
        t, frag = trace["tandem"]
        print()
        print("targets on the trace replay (tandem, 64 MiB regions):")
        checks = [(f"glibc / tandem >= 2", trace.get("glibc", (None,))[0], 2.0),
                  (f"jemalloc / tandem >= 1", trace.get("jemalloc", (None,))[0], 1.0),
                  (f"mimalloc / tandem >= 1", trace.get("mimalloc", (None,))[0], 1.0)]
        for text, base, need in checks:
            if base is not None:
                ratio = base / t
                print(f"  {text:<26} {ratio:8.2f}  {'met' if ratio >= need else 'MISSED'}")
        if frag is not None:
            print(f"  {'fragmentation <= 1.05':<26} {frag:8.3f}  {'met' if frag <= 1.05 else 'MISSED'}")


if __name__ == "__main__":
    main()
