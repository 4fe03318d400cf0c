#!/usr/bin/env python3
"""Writes a Salus-like trace (Salus §5.1): 100 training jobs of mixed models, batch sizes and
lengths arriving online on one 16 GB GPU. Lengths follow a heavy tail like the production
cluster trace Salus drew from: most jobs are short, a few are long.

    bench/sim/make_salus_trace.py [--jobs 100] [--seed 2020] > examples/paper/salus_trace_100.toml
"""
import argparse
import math
import random

# (model, batch sizes, model options) on a P100-16GB, each fitting alone.
MODELS = [
    ("resnet50", [25, 50, 75], {"image_side": 224, "classes": 1000}),
    ("vgg16", [25, 50], {"image_side": 224, "classes": 1000}),
    ("inception_v3", [25, 50], {}),
    ("resnet110", [32, 64, 128], {}),
    ("mobilenetv2", [32, 64], {"image_side": 224, "classes": 1000}),
    ("gnmt", [32, 64], {}),
    ("rhn", [20, 40], {}),
    ("lstm", [32, 64], {}),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--mean-gap", type=float, default=20.0, help="seconds between arrivals")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    print(f"# A Salus-like trace (Salus §5.1): {args.jobs} jobs arriving online on a P100-16GB.")
    print(f"# Written by bench/sim/make_salus_trace.py --jobs {args.jobs} --seed {args.seed};")
    print("#   build/src/tandem sim examples/paper/salus_trace_100.toml --gpu p100 \\")
    print("#       --compare exclusive,temporal,spatial,scrooge,mps-um")
    print("[device]")
    print('capacity = "16GiB"')
    print()
    print("[policy]")
    print('name = "exclusive"')
    arrival = 0.0
    for index in range(args.jobs):
        model, batches, options = MODELS[rng.randrange(len(MODELS))]
        batch = batches[rng.randrange(len(batches))]
        # Heavy tail: log-uniform between 20 and 2000 iterations, skewed short.
        iterations = int(round(20 * math.exp(rng.random() ** 2 * math.log(100))))
        print()
        print("[[job]]")
        print(f'name = "{model}_{batch}_{index}"')
        print(f'model = "{model}"')
        print(f"batch_size = {batch}")
        print(f"iterations = {iterations}")
        print(f'arrival = "{arrival:.1f}s"')
        if options:
            print("[job.model_options]")
            for key, value in options.items():
                print(f"{key} = {value}")
        arrival += rng.expovariate(1.0 / args.mean_gap)


if __name__ == "__main__":
    main()
