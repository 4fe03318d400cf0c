#!/usr/bin/python3
"""Four trials of a network defined here, with different learning rates, trained side by side
by ordinary PyTorch loops on four threads under one memory budget. The lines tandem adds to a
loop are marked "tandem:". Ctrl-C stops every trial at its next iteration and still prints what
was measured.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/hpo.py [--policy scrooge]
        [--budget 256MiB] [--iterations 30] [--json results.json]
        [--planner capuchin [--plan-budget 50%]]

With --planner, each trial's iteration 1 is recorded and planned, and from iteration 3 on tandem
swaps and recomputes its tensors as the plan says, the model unchanged.
"""

import argparse
import sys
import threading

import torch

import tandem


class SmallConvNet(torch.nn.Module):
    """A small classifier for 3x32x32 images."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.head = torch.nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


# torch.manual_seed sets one generator for every thread: trials build their networks one at a
# time, so that each starts from the same weights in every run.
_building = threading.Lock()


def train(job, learning_rate, iterations):
    """An ordinary PyTorch loop; its model and batch are gone when it returns."""
    with job.persistent(), _building:  # tandem: job.persistent()
        torch.manual_seed(0)
        net = SmallConvNet().to(job.device)  # tandem: job.device ("cpu" or "cuda:N")
        optimizer = torch.optim.SGD(net.parameters(), lr=learning_rate, momentum=0.9)
    generator = torch.Generator().manual_seed(1234)
    images = torch.randn(32, 3, 32, 32, generator=generator).to(job.device)
    labels = torch.randint(0, 10, (32,), generator=generator).to(job.device)

    def step_body(step):
        optimizer.zero_grad()
        # tandem: the forward pass may be cut short and run again when every running trial
        # waits for memory another holds, rather than a trial failing.
        with step.restartable(net):
            loss = torch.nn.functional.cross_entropy(net(images), labels)
        loss.backward()
        optimizer.step()
        step.report_loss(loss.item())  # tandem:

    for _ in range(iterations):
        job.run_iteration(step_body)  # tandem: waits until the policy lets it run


class Errors(list):
    """The trials' errors; bad_input when a join refused the command line's options."""
    bad_input = False


def trial(rt, name, learning_rate, iterations, errors, planner, plan_budget):
    try:
        with rt.join(name, model="small-convnet", batch_size=32,  # tandem:
                     planner=planner, plan_budget=plan_budget) as job:
            train(job, learning_rate, iterations)
    except tandem.Stopped:
        pass  # the runtime was stopped: the job left with what it measured
    except tandem.ConfigError as error:  # a wrong --planner or --plan-budget: refused at join
        errors.append(f"{name}: {error}")
        errors.bad_input = True
    except Exception as error:  # noqa: BLE001  (a failed trial is reported; the others go on)
        errors.append(f"{name}: {error}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="scrooge")
    parser.add_argument("--budget", default="256MiB")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--json", help="write the results here (the JSON of tandem run --json)")
    parser.add_argument("--planner", help="a footprint planner for every trial (capuchin, "
                        "tensile, vdnn-all, checkpoint, tandem, ...)")
    parser.add_argument("--plan-budget", help="the plans' budget: a share of a trial's recorded "
                        "peak (50%%) or a size (8MiB); needs --planner")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda / cuda:N where the module "
                        "was built against a CUDA torch")
    args = parser.parse_args()
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    try:
        # Small models want regions smaller than the pool's default 64 MiB (sized for GPUs).
        rt = tandem.Runtime(budget=args.budget, policy=args.policy, region_size="2MiB",
                            expected_jobs=4, device=args.device)
    except tandem.ConfigError as error:
        print(f"hpo.py: {error}", file=sys.stderr)
        return 2
    errors = Errors()
    threads = [threading.Thread(target=trial, args=(rt, f"trial-lr{rate}", rate, args.iterations,
                                                    errors, args.planner, args.plan_budget))
               for rate in (0.001, 0.01, 0.05, 0.1)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)
    except KeyboardInterrupt:
        print("\nhpo.py: stopping every trial at its next iteration", file=sys.stderr)
        rt.stop()
        for thread in threads:
            thread.join()
    rt.close()
    print(rt.table())
    for error in errors:
        print(error, file=sys.stderr)
    if args.json:
        rt.write_json(args.json)
    return 2 if errors.bad_input else 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
