#!/usr/bin/python3
"""Four trials of a network defined here, with different learning rates, trained side by side
by ordinary PyTorch loops on four threads under one memory budget. The lines tandem adds to a
loop are marked "tandem:". Ctrl-C (or SIGTERM) stops every trial at its next iteration, prints
and writes what was measured, and exits with 130 (143).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/hpo.py [--policy scrooge]
        [--budget 256MiB] [--iterations 30] [--json results.json] [--device cpu]
        [--planner capuchin [--plan-budget 50%]]

With --planner, each trial's iteration 1 is recorded and planned, and from iteration 4 on tandem
swaps and recomputes its tensors as the plan says, the model unchanged. Bad arguments exit 2.
"""

import signal
import sys


class Interrupts:
    """Ctrl-C and SIGTERM. The first stops the runtime, so every trial leaves at its next
    iteration; later ones only say that the stop is under way. The handler never raises: no wait
    of the main thread (a thread's join) is cut short, and no traceback ends the run. Armed
    before torch loads, so that a signal during the start is a stop too."""

    def __init__(self):
        self.signal = 0
        self._runtime = None
        for number in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(number) != signal.SIG_IGN:  # a background job's stays ignored
                signal.signal(number, self._handle)

    def _handle(self, number, _frame):
        if self.signal:
            print("hpo.py: already stopping; the trials leave after the iterations under way",
                  file=sys.stderr)
            return
        self.signal = number
        print(f"\nhpo.py: {signal.Signals(number).name}: stopping every trial at its next "
              "iteration", file=sys.stderr)
        if self._runtime is not None:
            self._runtime.stop()

    def watch(self, rt):
        """Stops `rt` at the first signal, or now if one came already."""
        self._runtime = rt
        if self.signal:
            rt.stop()

    def done(self):
        """Everything is printed and written: later signals are ignored, so that none kills the
        exit (Python gives the default handlers back while it shuts down)."""
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_IGN)

    def exit_status(self):
        """The shell's 128 + the signal: 130 for Ctrl-C."""
        return 128 + self.signal


interrupts = Interrupts()

# Imported after the handlers are armed: a signal while torch loads is a stop too.
import argparse  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402

import torch  # noqa: E402

import tandem  # noqa: E402


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


def trial(rt, name, learning_rate, args, errors):
    try:
        with rt.join(name, model="small-convnet", batch_size=32,  # tandem:
                     iterations=args.iterations, planner=args.planner,
                     plan_budget=args.plan_budget) as job:
            train(job, learning_rate, args.iterations)
    except tandem.Stopped:
        pass  # the runtime was stopped: the job left with what it measured
    except tandem.ConfigError as error:  # a wrong --planner or --plan-budget: refused at join
        errors.append(str(error))
        errors.bad_input = True
    except Exception as error:  # noqa: BLE001  (a failed trial is reported; the others go on)
        errors.append(f"{name}: {error}")


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="scrooge")
    parser.add_argument("--budget", default="256MiB",
                        help="what the trials may hold together (MB and MiB both mean 2^20 bytes)")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--json", help="write the results here (the JSON of tandem run --json)")
    parser.add_argument("--planner", help="a footprint planner for every trial (capuchin, "
                        "tensile, vdnn-all, checkpoint, tandem, ...)")
    parser.add_argument("--plan-budget", help="the plans' budget: a share of a trial's recorded "
                        "peak (50%%) or a size (8MiB); without --planner, the default planner plans")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda / cuda:N where the module "
                        "was built against a CUDA torch")
    args = parser.parse_args()
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    if args.json:
        problem = json_path_problem(args.json)
        if problem:
            parser.error(f"--json {args.json}: {problem}")
    return args


def json_path_problem(path):
    """Why the results could not be written to `path` (checked before training), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return "is a directory; name a file"
    if not os.path.isdir(folder):
        return f"the folder {folder} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None


def run_trials(rt, args):
    """The four trials on their threads, joined; returns their errors."""
    errors = Errors()
    threads = [threading.Thread(target=trial, args=(rt, f"trial-lr{rate}", rate, args, errors))
               for rate in (0.001, 0.01, 0.05, 0.1)]
    print(f"hpo.py: {len(threads)} trials of {args.iterations} iterations under {args.policy} "
          f"in {args.budget}; Ctrl-C stops them", file=sys.stderr, flush=True)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()  # a signal stops the runtime and the join goes on: never cut short
    return errors


def report(rt, args, errors):
    """Prints the table and the trials' errors, writes the JSON; returns the exit status."""
    print(rt.table())
    for error in errors:
        print(error, file=sys.stderr)
    if args.json:
        try:
            rt.write_json(args.json)
        except tandem.Error as error:
            print(f"hpo.py: --json {args.json}: {error}", file=sys.stderr)
            return 2
    return 1 if errors else 0


def main():
    args = parse_arguments()
    try:
        # Small models want regions smaller than the pool's default 64 MiB (sized for GPUs).
        rt = tandem.Runtime(budget=args.budget, policy=args.policy, region_size="2MiB",
                            expected_jobs=4, device=args.device)
    except tandem.Error as error:  # a bad --budget, --policy or --device
        print(f"hpo.py: {error}", file=sys.stderr)
        return 2
    interrupts.watch(rt)
    errors = run_trials(rt, args)
    rt.close()  # after a stop it waits for every trial to leave
    if errors.bad_input:  # every trial was refused the same way: no table, the reason once
        print(f"hpo.py: {errors[0]}", file=sys.stderr)
        return 2
    status = report(rt, args, errors)
    return interrupts.exit_status() if interrupts.signal else status


if __name__ == "__main__":
    exit_status = main()
    interrupts.done()
    sys.exit(exit_status)
