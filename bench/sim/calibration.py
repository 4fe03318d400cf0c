#!/usr/bin/env python3
"""The simulator against the papers' figures: solo throughputs that vendors and papers publish,
then co-location ratios (Waterwave Fig. 7, Zico Fig. 5 and Fig. 8) with no further tuning.

    bench/sim/calibration.py BUILD_DIR

Prints one table: figure, paper value, simulator value, error (relative for throughputs, absolute
for ratios), and whether it is within the target (10% for throughputs, 0.1x for ratios).
The simulator against a lent GPU is bench/sim/gpu_validation.py (scripts/gpu-check.sh runs it).
Sources of every figure: docs/sim-models.md, "Calibration".
"""
import json
import os
import subprocess
import sys
import tempfile

from workload_file import write_workload

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
TANDEM = os.path.join(BUILD, "src", "tandem")
WORK = tempfile.mkdtemp(prefix="tandem-calibration-")


def workload(jobs, policy="temporal", capacity="80GiB", seconds=None):
    """A workload file of `jobs` [(name, model, batch, optimizer, options)]."""
    path = os.path.join(WORK, f"w{len(os.listdir(WORK))}.toml")
    entries = []
    for name, model, batch, optimizer, options in jobs:
        job = {"name": name, "model": model, "batch_size": batch}
        job.update({"duration_s": seconds} if seconds else {"iterations": 20})
        if optimizer != "sgd":
            job["optimizer"] = optimizer
        job["model_options"] = options
        entries.append(job)
    return write_workload(path, policy, entries, {"capacity": capacity} if capacity else None)


def simulate(path, gpu, policies, batches=None):
    """{(batch or 'file', policy): result} from tandem sim --compare --json."""
    out = os.path.join(WORK, "out.json")
    command = [TANDEM, "sim", path, "--gpu", gpu, "--compare", ",".join(policies), "--json", out]
    if batches:
        command += ["--sweep-batch", ",".join(str(b) for b in batches)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        results = json.load(f)
    if isinstance(results, dict):
        results = [results]
    keyed = {}
    for i, r in enumerate(results):
        batch = batches[i // len(policies)] if batches else "file"
        keyed[(batch, r["policy"])] = r
    return keyed


def solo(model, batch, gpu, optimizer="sgd", options=None, per_sample=1):
    """A job's solo throughput in samples/s (times per_sample: tokens, frames)."""
    path = workload([("a", model, batch, optimizer, options or {})], policy="exclusive")
    r = simulate(path, gpu, ["exclusive"])[("file", "exclusive")]
    return r["jobs"][0]["samples_per_s"] * per_sample


IMAGENET = {"resnet50": {"image_side": 224, "classes": 1000}}


# The framework each paper ran, where the catalogue's model has a lowering for it
# (docs/sim-models.md, "Frameworks"): Zico and Waterwave trained on TensorFlow 1.x.
TENSORFLOW = {m: {"framework": 1} for m in ("gnmt", "nasnet", "bert_base", "inception_v3")}


def ratios(model, batches, gpu, policy, optimizer="sgd", capacity="80GiB", options=None):
    """Two identical jobs: aggregate samples/s under `policy` over temporal's, per batch."""
    options = {**IMAGENET.get(model, {}), **TENSORFLOW.get(model, {}), **(options or {})}
    path = workload([(n, model, batches[0], optimizer, options) for n in "ab"],
                    capacity=capacity)
    keyed = simulate(path, gpu, ["temporal", policy], batches)
    out = []
    for b in batches:
        t, p = keyed[(b, "temporal")], keyed[(b, policy)]
        failed = any(j["status"] != "completed" for j in p["jobs"])
        out.append((b, p["aggregate_samples_per_s"] / t["aggregate_samples_per_s"], failed))
    return out


def pair(example, gpu, policy="scrooge"):
    keyed = simulate(example, gpu, ["temporal", policy])
    return (keyed[("file", policy)]["aggregate_samples_per_s"] /
            keyed[("file", "temporal")]["aggregate_samples_per_s"])


rows = []


def throughput(figure, paper, sim, unit):
    error = (sim - paper) / paper
    rows.append((figure, f"{paper:,.0f} {unit}", f"{sim:,.0f} {unit}", f"{error:+.1%}",
                 "yes" if abs(error) <= 0.10 else "NO"))


def ratio(figure, paper, sim, detail=""):
    error = sim - paper
    rows.append((figure, f"{paper:.2f}x", f"{sim:.2f}x{detail}", f"{error:+.2f}x",
                 "yes" if abs(error) <= 0.10 + 1e-9 else "NO"))


def best(results):
    b, r, _ = max(results, key=lambda x: x[1])
    return r, f" (b{b})"


def mean(results):
    return sum(r for _, r, _ in results) / len(results)


def main():
    # Solo throughputs (vendors' and papers' figures; docs/sim-models.md, "Calibration").
    throughput("ResNet-50 b256, V100 (NVIDIA DLE PyTorch FP32)", 356,
               solo("resnet50", 256, "v100", options={"image_side": 224, "classes": 1000}), "img/s")
    throughput("ResNet-50 b32, P100 (TF benchmarks)", 195,
               solo("resnet50", 32, "p100", options={"image_side": 224, "classes": 1000}), "img/s")
    throughput("Inception-v3 b32, P100 (TF benchmarks)", 128,
               solo("inception_v3", 32, "p100", options=TENSORFLOW["inception_v3"]), "img/s")
    throughput("BERT-base b32 seq 128, V100 (NVIDIA TF, BERT-large x3)", 140,
               solo("bert_base", 32, "v100", options=TENSORFLOW["bert_base"]), "seq/s")
    throughput("GNMT b128, V100 (NVIDIA DLE PyTorch FP32, Adam)", 22695,
               solo("gnmt", 128, "v100", "adam", per_sample=100), "tok/s")
    throughput("Tacotron 2 b64, V100 (NVIDIA DLE PyTorch FP32, Adam)", 12933,
               solo("tacotron", 64, "v100", "adam", per_sample=800), "frames/s")
    # Co-location, no further tuning.
    cnn = []
    for model in ("resnet50", "inception_v3", "bert_base"):
        cnn += [(f"{model} b{b}", r, f) for b, r, f in ratios(model, [32, 64], "v100", "spatial")]
    top = max(cnn, key=lambda x: x[1])
    ratio("Waterwave: CNNs and BERT, best gain over temporal (V100)", 1.1427, top[1],
          f" ({top[0]})")
    taco = ratios("tacotron", [16, 32, 64], "v100", "spatial", "adam")
    r, where = best(taco)
    ratio("Waterwave: Tacotron 2, best gain over temporal (V100)", 1.49, r, where)
    gnmt = ratios("gnmt", [32, 64, 96, 128], "2080ti", "scrooge", capacity="11GiB")
    ratio("Zico: GNMT (TF 1.x) pair, mean over b32-128 (2080 Ti)", 1.37, mean(gnmt),
          " (" + " ".join(f"{x:.2f}" for _, x, _ in gnmt) + ")")
    nas = ratios("nasnet", [16, 32, 48, 64], "2080ti", "scrooge", capacity="11GiB")
    ratio("Zico: NASNet pair, mean over b16-64 (2080 Ti)", 1.35, mean(nas),
          " (" + " ".join(f"{x:.2f}" for _, x, _ in nas) + ")")
    for name, paper in (("rhn_gnmt", 1.42), ("nasnet_gnmt", 1.46), ("bert_gnmt", 1.27),
                        ("nasnet_resnet110", 1.15)):
        ratio(f"Zico: {name.replace('_', '+')} pair (2080 Ti)", paper,
              pair(f"examples/paper/{name}.toml", "2080ti"))
    widths = [max(len(str(r[i])) for r in rows + [HEADER]) for i in range(5)]
    for r in [HEADER, tuple("-" * w for w in widths)] + rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)))


HEADER = ("figure", "paper", "simulator", "error", "within target")

if __name__ == "__main__":
    main()
