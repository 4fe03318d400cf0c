"""The Python module on user-defined PyTorch models: losses fall, the budget holds, a failing
trial leaves the others as they would be alone, wrong arguments raise clear exceptions, stop()
keeps what was measured. Run by ctest (tests/python/CMakeLists.txt) with the built module on
PYTHONPATH, under Debian's /usr/bin/python3."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

import tandem


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                          torch.nn.Linear(128, 4))

    def forward(self, x):
        return self.layers(x)


_initialization = threading.Lock()


def train(rt, name, iterations, fail_at=None, losses=None):
    """A user's loop; `fail_at` raises inside that iteration."""
    losses = [] if losses is None else losses
    with rt.join(name, model="mlp-test", batch_size=16, iterations=iterations) as job:
        loop(job, iterations, fail_at, losses)  # its tensors are gone when the job leaves
    return losses


def loop(job, iterations, fail_at, losses):
    with job.persistent():
        with _initialization:  # torch's default generator is the process's
            torch.manual_seed(3)
            net = Mlp()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(11)
    x = torch.randn(16, 64, generator=generator)
    y = torch.randint(0, 4, (16,), generator=generator)
    for i in range(iterations):
        with job.iteration() as step:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            if i == fail_at:
                raise RuntimeError("injected failure")
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            step.report_loss(losses[-1])


def runtime(policy="scrooge", budget="64MiB"):
    return tandem.Runtime(budget=budget, policy=policy, region_size="2MiB", expected_jobs=2)


def in_threads(*targets):
    threads = [threading.Thread(target=t) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize("policy", ["scrooge", "nodegroup", "temporal"])
def test_two_trials_train_side_by_side_within_the_budget(policy):
    rt = runtime(policy)
    a, b = [], []
    in_threads(lambda: train(rt, "a", 12, losses=a), lambda: train(rt, "b", 12, losses=b))
    results = rt.results()
    assert [job["status"] for job in results["jobs"]] == ["completed", "completed"]
    for job in results["jobs"]:
        assert job["iterations"] == 12
        assert job["last_loss"] < job["first_loss"]
    assert results["peak_live_bytes"] <= results["budget_bytes"]
    assert a == b  # the same seeds: the same losses, whatever ran beside them
    assert "a " in rt.table() and "completed" in rt.table()
    assert results["warnings"] == []
    rt.close()


def test_a_failing_trial_leaves_the_other_as_it_would_be_alone():
    with runtime() as rt:
        alone = train(rt, "survivor", 10)
    rt = runtime()
    beside = []
    failures = []

    def failing():
        try:
            train(rt, "failing", 10, fail_at=4)
        except RuntimeError as error:
            failures.append(str(error))

    in_threads(lambda: train(rt, "survivor", 10, losses=beside), failing)
    assert failures == ["injected failure"]
    assert beside == alone
    jobs = {job["name"]: job for job in rt.results()["jobs"]}
    assert jobs["survivor"]["status"] == "completed"
    assert jobs["failing"]["status"] == "failed"
    assert jobs["failing"]["iterations"] == 4
    assert "injected failure" in jobs["failing"]["error"]
    assert rt.results()["warnings"] == []
    rt.close()


class NormedMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.BatchNorm1d(128),
                                          torch.nn.ReLU(), torch.nn.Linear(128, 4))

    def forward(self, x):
        return self.layers(x)


def train_restartably(rt, outcome, second_try=None, holder_gone=None):
    """Three iterations through run_iteration; the second takes 4 MiB at the end of its forward
    pass, inside the restartable part, and on its second try first waits for `holder_gone`."""
    with rt.join("restarting", model="normed-mlp", batch_size=16, iterations=3) as job:
        with job.persistent():
            with _initialization:
                torch.manual_seed(5)
                net = NormedMlp()
            optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
        generator = torch.Generator().manual_seed(13)
        x = torch.randn(16, 64, generator=generator)
        y = torch.randint(0, 4, (16,), generator=generator)
        outcome["attempts"] = 0
        outcome["losses"] = []
        for i in range(3):
            def body(step):
                optimizer.zero_grad()
                with step.restartable(net):
                    logits = net(x)
                    if i == 1:
                        outcome["attempts"] += 1
                        if outcome["attempts"] == 2 and second_try is not None:
                            second_try.set()
                            holder_gone.wait()
                        scratch = torch.ones(1024 * 1024)  # 4 MiB
                        logits = logits + scratch.sum() * 0
                    loss = torch.nn.functional.cross_entropy(logits, y)
                loss.backward()
                optimizer.step()
                outcome["losses"].append(loss.item())
                step.report_loss(outcome["losses"][-1])
            job.run_iteration(body)
        outcome["running_mean"] = net.layers[1].running_mean.tolist()


@pytest.mark.parametrize("policy", ["temporal", "scrooge"])
def test_a_trial_cut_short_in_its_restartable_part_runs_the_iteration_again(policy):
    # 12 MiB of 2 MiB regions; a holder keeps 8 MiB and runs no iteration. The trial, alone
    # mid-iteration, wants 4 MiB more than is left: it lets go rather than fail, the holder
    # leaves, and the second try computes what a run never cut computes.
    alone = {}
    with runtime("temporal", "12MiB") as rt:
        train_restartably(rt, alone)
    rt = runtime(policy, "12MiB")
    cut = {}
    second_try = threading.Event()
    holder_gone = threading.Event()
    holding = threading.Event()

    def holder():
        with rt.join("holder", model="blob", batch_size=1) as job:
            def hold():
                with job.persistent():
                    blob = torch.ones(2 * 1024 * 1024)  # 8 MiB
                holding.set()
                second_try.wait()
                del blob
            hold()
        holder_gone.set()

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait()
    train_restartably(rt, cut, second_try, holder_gone)
    thread.join()
    assert cut["attempts"] == 2
    assert cut["losses"] == alone["losses"]
    assert cut["running_mean"] == alone["running_mean"]
    results = rt.results()
    rt.close()
    restarted = next(job for job in results["jobs"] if job["name"] == "restarting")
    assert restarted["status"] == "completed", restarted["error"]
    assert restarted["restarts"] == 1
    assert len(restarted["restarted_attempts"]) == 1


class Deep(torch.nn.Module):
    """Activations of 1 MiB per layer, kept for the backward pass, beside 64 KiB of weights."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(*[m for _ in range(4)
                                            for m in (torch.nn.Linear(128, 128), torch.nn.ReLU())])

    def forward(self, x):
        return self.layers(x)


def train_deep(budget, iterations=3, **join_options):
    rt = tandem.Runtime(budget=budget, policy="exclusive", region_size="2MiB",
                        copy_bandwidth="memcpy")
    losses = []
    with rt.join("deep", batch_size=2048, **join_options) as job:
        with job.persistent():
            torch.manual_seed(5)
            net = Deep()
            optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        x = torch.randn(2048, 128, generator=torch.Generator().manual_seed(7))
        for _ in range(iterations):
            with job.iteration() as step:
                optimizer.zero_grad()
                loss = net(x).pow(2).mean()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
                step.report_loss(losses[-1])
        del net, optimizer, x, loss
    results = rt.results()
    rt.close()
    return losses, results["jobs"][0]


def test_a_trial_swapping_passively_trains_under_a_budget_below_its_peak():
    roomy, alone = train_deep("256MiB")
    budget = f"{alone['peak_reserved_bytes'] * 2 // 3 // (1 << 20)}MiB"
    losses, job = train_deep(budget, swap_passively=True)
    assert job["status"] == "completed", job.get("error")
    assert losses == roomy  # bitwise: the swaps move bytes, never change them
    moved = [it for it in job["iteration_log"] if it.get("swapped_out_bytes", 0) > 0]
    assert moved and all(it["plan"] == "passive swapping" for it in moved)
    assert job["peak_reserved_bytes"] <= 2 * alone["peak_reserved_bytes"] // 3


def test_a_trial_under_a_footprint_plan_trains_below_its_peak_with_the_same_losses():
    roomy, alone = train_deep("256MiB", iterations=6)
    budget = f"{alone['peak_reserved_bytes'] * 3 // 4 // (1 << 20)}MiB"
    losses, job = train_deep(budget, iterations=6, planner="capuchin", plan_budget="50%")
    assert job["status"] == "completed", job.get("error")
    assert losses == roomy  # bitwise: the plan moves and rebuilds bytes, never changes them
    assert [it.get("plan") for it in job["iteration_log"][4:]] == ["capuchin"] * 2
    footprint = job["footprint"]
    assert footprint["planner"] == "capuchin"
    assert footprint["swapped_tensors"] + footprint["recomputed_tensors"] > 0
    assert footprint["diverged_iterations"] == 0
    with pytest.raises(tandem.ConfigError, match="did you mean 'capuchin'"):
        train_deep("256MiB", planner="capuchn")
    with pytest.raises(tandem.ConfigError, match="plan_budget"):
        train_deep("256MiB", plan_budget="lots")
    rt = tandem.Runtime(budget="64MiB")
    with pytest.raises(tandem.ConfigError, match="at least 5 iterations"):
        rt.join("short", iterations=4, planner="capuchin")
    rt.close()


def test_pytorchs_saved_tensor_hooks_still_work_after_a_planned_trial():
    # tandem installs its own autograd engine for the hooks of the tensors autograd saves; a
    # thread it does not watch keeps PyTorch's (torch.utils.checkpoint relies on them).
    train_deep("256MiB", iterations=5, planner="capuchin")
    packed = []
    x = torch.ones(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        (x * x).sum().backward()
    assert packed and torch.equal(x.grad, 2 * torch.ones(3))


def test_wrong_arguments_raise_clear_exceptions():
    with pytest.raises(tandem.ConfigError, match="did you mean 'scrooge'"):
        tandem.Runtime(budget="64MiB", policy="scroge")
    with pytest.raises(tandem.ConfigError, match="budget"):
        tandem.Runtime(budget="lots")
    with pytest.raises(tandem.ConfigError, match="no option 'lanez'"):
        tandem.Runtime(budget="64MiB", policy="scrooge", policy_options={"lanez": 2})
    with pytest.raises(TypeError):
        tandem.Runtime(budget=64)
    with pytest.raises(tandem.ConfigError, match="inflight_limit bounds"):
        tandem.Runtime(budget="64MiB", inflight_limit=4)
    with pytest.raises(tandem.ConfigError, match='CPU backend only.*use device = "cpu"'):
        tandem.Runtime(budget="64MiB", device="cuda")  # Debian's torch has no CUDA
    with pytest.raises(tandem.ConfigError, match="budget must be greater than 0"):
        tandem.Runtime(budget="0")
    with pytest.raises(tandem.ConfigError,
                       match='budget "1000TiB" .* this machine can reserve .* smaller budget'):
        tandem.Runtime(budget="1000TiB")
    with pytest.raises(tandem.ConfigError, match="set expected_jobs"):
        tandem.Runtime(budget="64MiB", policy="static")
    rt = runtime()
    with pytest.raises(tandem.UsageError, match="another tandem runtime"):
        runtime()
    with rt.join("one") as job:
        with pytest.raises(tandem.UsageError, match="already job 'one'"):
            rt.join("two")
        with pytest.raises(tandem.UsageError, match="report_loss outside an iteration"):
            job._handle.report_loss(1.0)
        with job.iteration():
            with pytest.raises(tandem.UsageError, match="already under way"):
                job.iteration().__enter__()
    with pytest.raises(tandem.UsageError, match="has left"):
        with job.iteration():
            pass
    with pytest.raises(tandem.UsageError, match="at most the capacity"):
        rt.change_budget("1TiB")
    rt.close()
    with pytest.raises(tandem.UsageError, match="closed"):
        rt.join("late")
    assert [job["name"] for job in rt.results()["jobs"]] == ["one"]


def test_every_exception_of_tandem_is_a_tandem_error():
    for kind in (tandem.ConfigError, tandem.UsageError, tandem.Stopped):
        assert issubclass(kind, tandem.Error)
    assert issubclass(tandem.ConfigError, ValueError)  # bad options, as Python's own
    assert issubclass(tandem.UsageError, RuntimeError)


def test_static_splits_the_budget_among_the_expected_trials():
    rt = runtime("static")  # expected_jobs=2: static's partitions
    a, b = [], []
    in_threads(lambda: train(rt, "a", 6, losses=a), lambda: train(rt, "b", 6, losses=b))
    results = rt.results()
    rt.close()
    assert results["policy"] == "static"
    assert [job["status"] for job in results["jobs"]] == ["completed", "completed"]
    for job in results["jobs"]:
        assert job["iterations"] == 6
        assert job["peak_reserved_bytes"] <= results["budget_bytes"] // 2
    assert a == b


def test_leaving_a_runtime_block_by_an_exception_stops_the_trials_and_waits_for_them():
    # Ctrl-C while the main thread joins the trials: the KeyboardInterrupt leaves the block,
    # which stops the trials at their next iteration and closes once they left.
    stopped = []
    started = threading.Event()

    def endless(rt):
        started.set()
        try:
            train(rt, "endless", 10**6)
        except tandem.Stopped:
            stopped.append("endless")

    with pytest.raises(KeyboardInterrupt):
        with runtime() as rt:
            thread = threading.Thread(target=endless, args=(rt,))
            thread.start()
            started.wait()
            threading.Event().wait(0.3)
            raise KeyboardInterrupt
    thread.join()
    assert stopped == ["endless"]
    assert [job["status"] for job in rt.results()["jobs"]] in ([], ["stopped"])
    runtime().close()  # closed: another runtime can be made


def test_close_says_what_to_do_while_a_trial_still_runs():
    rt = runtime()
    with rt.join("mine"):
        with pytest.raises(tandem.UsageError, match="of this thread has not left"):
            rt.close()
    rt.close()


def test_stop_ends_every_trial_at_its_next_iteration_and_keeps_what_was_measured(tmp_path):
    rt = runtime()
    stopped = []

    def endless(name):
        try:
            train(rt, name, 10**6)
        except tandem.Stopped:
            stopped.append(name)

    threads = [threading.Thread(target=endless, args=(f"job{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    threading.Event().wait(0.5)
    rt.stop()
    for thread in threads:
        thread.join()
    assert sorted(stopped) == ["job0", "job1"]
    rt.close()
    path = tmp_path / "results.json"
    rt.write_json(str(path))
    results = json.loads(path.read_text())
    assert results["stopped"] is True
    for job in results["jobs"]:
        assert job["status"] == "stopped"
        assert 0 < job["iterations"] < 10**6


def test_the_example_trains_four_trials(tmp_path):
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "hpo.py")
    out = tmp_path / "hpo.json"
    run = subprocess.run([sys.executable, example, "--iterations", "5", "--json", str(out)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert [line.split()[1] for line in run.stdout.splitlines()
            if line.startswith("trial-")] == ["completed"] * 4
    assert "still alive" not in run.stderr
    assert len(json.loads(out.read_text())["jobs"]) == 4
    bad = subprocess.run([sys.executable, example, "--policy", "nope"], capture_output=True,
                         text=True, timeout=60, check=False)
    assert bad.returncode == 2
    assert "unknown policy 'nope'" in bad.stderr


EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "hpo.py")


def start_example(tmp_path, *arguments):
    """hpo.py as a user starts it, its stderr in a file; SIGINT and SIGTERM at their defaults
    even where this test runs with them ignored."""
    def default_signals():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    with open(tmp_path / "stderr.txt", "w", encoding="utf-8") as err:  # the child keeps its own
        example = subprocess.Popen([sys.executable, EXAMPLE, *arguments],
                                   stdout=subprocess.PIPE, stderr=err, text=True,
                                   preexec_fn=default_signals)
    return example, tmp_path / "stderr.txt"


def wait_for_text(path, text, process, limit_s=120):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and process.poll() is None:
        if text in path.read_text():
            return True
        time.sleep(0.05)
    return text in path.read_text()


@pytest.mark.parametrize("signals", [1, 2])
def test_ctrl_c_stops_the_example_and_keeps_what_was_measured(tmp_path, signals):
    # Ctrl-C once or twice: every trial stops at an iteration boundary, the table and the JSON
    # hold what was measured, the exit status is 130. It once aborted ("close: job ... has not
    # left", then "terminate called") or ended in a KeyboardInterrupt traceback.
    out = tmp_path / "hpo.json"
    example, err = start_example(tmp_path, "--iterations", "1000000", "--json", str(out))
    try:
        assert wait_for_text(err, "Ctrl-C stops them", example), err.read_text()
        time.sleep(2)  # the trials join and train
        for _ in range(signals):
            example.send_signal(signal.SIGINT)
            time.sleep(0.2)
        table, _ = example.communicate(timeout=120)
    finally:
        example.kill()
    errors = err.read_text()
    assert example.returncode == 130, errors
    assert "Traceback" not in errors and "terminate" not in errors, errors
    trials = [line.split() for line in table.splitlines() if line.startswith("trial-")]
    assert [trial[1] for trial in trials] == ["stopped"] * 4, table
    assert all(int(trial[2]) > 0 for trial in trials), table
    results = json.loads(out.read_text())
    assert results["stopped"] is True
    assert [job["status"] for job in results["jobs"]] == ["stopped"] * 4


def test_ctrl_c_while_the_example_starts_ends_it_without_a_traceback(tmp_path):
    example, err = start_example(tmp_path, "--iterations", "1000000")
    try:
        time.sleep(0.3)  # torch is loading
        example.send_signal(signal.SIGINT)
        example.communicate(timeout=120)
    finally:
        example.kill()
    assert example.returncode == 130, err.read_text()
    assert "Traceback" not in err.read_text()


@pytest.mark.parametrize("arguments, message", [
    (["--plan-budget", "lots"], "plan_budget"),
    (["--json", "/nonexistent/dir/r.json"], "the folder /nonexistent/dir does not exist"),
    (["--budget", "0"], "budget must be greater than 0"),
    (["--budget", "1000TiB"], "this machine can reserve"),
    (["--device", "cuda"], 'use device = "cpu"'),
    (["--planner", "bogus"], "unknown planner 'bogus'"),
    (["--planner", "capuchin", "--iterations", "4"], "needs at least 5 iterations"),
    (["--iterations", "0"], "--iterations must be at least 1"),
])
def test_the_example_refuses_bad_arguments_with_status_2(arguments, message):
    run = subprocess.run([sys.executable, EXAMPLE, *arguments], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr
    assert "Traceback" not in run.stderr
    assert "trial-" not in run.stdout  # refused before any table
    assert run.stderr.count(message) == 1  # said once, not once per trial


def test_the_example_trains_under_static():
    run = subprocess.run([sys.executable, EXAMPLE, "--policy", "static", "--iterations", "3"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert [line.split()[1] for line in run.stdout.splitlines()
            if line.startswith("trial-")] == ["completed"] * 4
