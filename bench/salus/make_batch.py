#!/usr/bin/env python3
"""Writes a workload of identical jobs arriving together: a hyper-parameter batch (Salus §5.2)
when --kind training, or a set of served models (Salus §5.3) when --kind inference.

    bench/salus/make_batch.py --jobs 60 --model mobilenetv2 --batch 32 --iterations 300 \
        --capacity 16GiB > batch.toml                                  (for tandem sim --gpu p100)
    bench/salus/make_batch.py --kind inference --jobs 8 --model resnet20 --batch 1 \
        --rate 20 --requests 100 --cpu --capacity 1GiB --budget 256MiB --policy pack
"""
import argparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["training", "inference"], default="training")
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--rate", type=float, default=20.0, help="inference: requests/s per model")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--option", action="append", default=[], help="model option KEY=VALUE")
    parser.add_argument("--cpu", action="store_true", help="a cpu [device] for tandem run")
    parser.add_argument("--capacity", default="16GiB")
    parser.add_argument("--budget", default="")
    parser.add_argument("--policy", default="fifo")
    args = parser.parse_args()

    print(f"# {args.jobs} x {args.model} batch {args.batch} ({args.kind}), written by "
          "bench/salus/make_batch.py")
    print("[device]")
    if args.cpu:
        print('kind = "cpu"')
        print('region_size = "2MiB"')
    print(f'capacity = "{args.capacity}"')
    if args.budget:
        print(f'budget = "{args.budget}"')
    print()
    print("[policy]")
    print(f'name = "{args.policy}"')
    for index in range(args.jobs):
        print()
        print("[[job]]")
        print(f'name = "{args.model}_{index}"')
        print(f'model = "{args.model}"')
        print(f"batch_size = {args.batch}")
        if args.kind == "inference":
            print('kind = "inference"')
            print(f"rate = {args.rate}")
            print(f"requests = {args.requests}")
        else:
            print(f"iterations = {args.iterations}")
        if args.cpu:
            print("threads = 1")
        if args.option:
            print("[job.model_options]")
            for option in args.option:
                key, value = option.split("=", 1)
                print(f"{key} = {value}")


if __name__ == "__main__":
    main()
