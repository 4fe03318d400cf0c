"""tandem for PyTorch users: several training loops side by side under one memory budget.

    import tandem
    rt = tandem.Runtime(budget="1GiB", policy="scrooge")
    # on each trial's thread:
    with rt.join("trial-1", model="my-net", batch_size=32) as job:
        with job.persistent():
            model = MyNet(); optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in batches:
            with job.iteration() as step:
                loss = ...; loss.backward(); optimizer.step()
                step.report_loss(loss.item())
    print(rt.table())
    rt.close()  # or use the runtime as a context manager

The runtime owns the memory of every tensor the joined threads make (it is torch's CPU allocator
while it lives), and its policy decides when each job's iteration may run. A job's calls belong
to the thread that joined. An exception inside an iteration fails that job only: it leaves, its
memory goes back, and the other trials go on as they would alone. Tensors that outlive their
job's `with` block (a model made in the block's own function) keep their memory out of the
other jobs' reach until they are dropped, and the results warn of it: make the model inside a
function the block calls. One Runtime is alive in a process at a time.
"""

import json
import traceback

import torch  # the libtorch the compiled half installs its allocator in

from ._tandem import ConfigError, Error, Stopped, UsageError
from ._tandem import Runtime as _Runtime

__all__ = ["Runtime", "Job", "ConfigError", "UsageError", "Stopped", "Error"]


class _Iteration:
    def __init__(self, job):
        self._job = job
        self._buffers = []  # (buffer, saved copy) of the model a restartable part named
        self.restarted = False  # the policy cut it short in its restartable part

    def __enter__(self):
        self._job.begin_iteration()
        return self

    def report_loss(self, loss):
        """The iteration's loss, for the results' first and last loss."""
        self._job.report_loss(float(loss))

    def restartable(self, model=None):
        """`with step.restartable(model):` around the forward pass: while inside, a wait for
        memory that every running iteration shares may end with this iteration cut short (an
        exception) instead of a job failing; Job.run_iteration then runs it again. Not the
        backward pass or the optimizer step: they cannot be undone. `model`'s buffers (batch
        norm's running statistics) are saved and written back if the iteration is cut."""
        return _Restartable(self, model)

    def __exit__(self, kind, value, trace):
        if kind is None:
            self._job.end_iteration()
        else:
            self.restarted = self._job.fail_iteration(f"{kind.__name__}: {value}")
            if self.restarted:
                with torch.no_grad():
                    for buffer, saved in self._buffers:
                        buffer.copy_(saved)
        self._buffers = []
        return False


class _Restartable:
    def __init__(self, step, model):
        self._step = step
        self._model = model

    def __enter__(self):
        if self._model is not None:
            self._step._buffers = [(b, b.detach().clone()) for b in self._model.buffers()]
        self._step._job.begin_restartable()
        return self

    def __exit__(self, kind, value, trace):
        self._step._job.end_restartable()
        return False


class _Persistent:
    def __init__(self, job):
        self._job = job

    def __enter__(self):
        self._job.begin_persistent()
        return self

    def __exit__(self, kind, value, trace):
        self._job.end_persistent()
        return False


class Job:
    """A trial joined to a runtime; use it as a context manager on the thread that joined."""

    def __init__(self, handle):
        self._handle = handle

    @property
    def name(self):
        return self._handle.name

    @property
    def iterations(self):
        """Iterations ended so far."""
        return self._handle.iterations

    @property
    def device(self):
        """Where the trial's model and batches belong, as torch names it: "cpu", or "cuda:N" on
        a CUDA runtime, whose current stream on the joined thread is then the trial's own."""
        return self._handle.device

    def iteration(self):
        """`with job.iteration() as step:` waits until the policy lets the job run one."""
        return _Iteration(self._handle)

    def persistent(self):
        """`with job.persistent():` tags what is made inside (weights, optimizer state)."""
        return _Persistent(self._handle)

    def run_iteration(self, body):
        """Runs one iteration: `body(step)` is called, and called again on a new iteration each
        time the policy cut it short inside `with step.restartable(...)` (the job's `restarts`
        count them). Anything else that leaves `body` fails the job and is raised."""
        while True:
            step = _Iteration(self._handle)
            try:
                with step:
                    body(step)
                return
            except Exception as error:  # noqa: BLE001  (re-raised unless it was a restart)
                if not step.restarted:
                    raise
                # The cut try's frames hold its tensors: let them go before running it again.
                traceback.clear_frames(error.__traceback__)

    def fail(self, reason):
        self._handle.fail(str(reason))

    def leave(self):
        self._handle.leave()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, trace):
        if trace is not None:
            # The traceback keeps the failed loop's frames, and with them its tensors, alive;
            # clear them so that the job's memory goes back as it leaves.
            traceback.clear_frames(trace)
        if kind is not None and not issubclass(kind, Stopped):
            self._handle.fail(f"{kind.__name__}: {value}")
        self._handle.leave()
        return False


class Runtime:
    """One device's memory and policy, shared by the jobs that join it.

    budget: what the jobs may hold together ("1GiB"); policy: a tandem policy name (scrooge,
    nodegroup, temporal, spatial, static, exclusive, fifo, srtf, pack, fair); capacity: what
    the pool reserves (default: the budget); region_size: the pool's unit of sharing (default
    64MiB; small models want "2MiB"); policy_options: the policy's numeric options;
    expected_jobs: how many will join, when known (static needs it); device: "cpu", or "cuda"
    / "cuda:N" when the module was built against a CUDA torch; copy_bandwidth: the CPU
    backend's simulated copy engine; inflight_limit: on CUDA, Zico's limit on the allocating
    operations a trial's host may queue ahead of its stream (0: none).
    """

    def __init__(self, budget, policy="scrooge", capacity=None, region_size=None,
                 policy_options=None, expected_jobs=0, copy_bandwidth="auto", device="cpu",
                 inflight_limit=0):
        self._runtime = _Runtime(budget=budget, policy=policy, capacity=capacity,
                                 region_size=region_size, policy_options=policy_options or {},
                                 expected_jobs=expected_jobs, copy_bandwidth=copy_bandwidth,
                                 device=device, inflight_limit=inflight_limit)

    def close(self):
        """Takes the device down, so that another Runtime can be made; results stay readable.
        Every job must have left, or, after stop(), it waits for the other threads' jobs to
        leave at their next iteration. Also what leaving a `with tandem.Runtime(...)` block
        does."""
        self._runtime.close()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, trace):
        if kind is None:
            self.close()
            return False
        # Left by an exception (Ctrl-C's KeyboardInterrupt while joining the threads): the jobs
        # stop at their next iteration and are waited for. A close that still cannot take the
        # device down must not hide the exception; the device goes when the last job leaves.
        self.stop()
        try:
            self.close()
        except Error:
            pass
        return False

    def join(self, name, model="custom", batch_size=0, iterations=None, priority=0,
             swap_passively=False, planner=None, plan_budget=None):
        """The calling thread joins as job `name`; jobs alike in model and batch share what a
        policy learns of their memory. swap_passively: when an iteration finds no memory, the
        job's least recently used tensors go to host memory and come back before they are read
        (Capuchin's passive mode), so it trains under a budget below its peak.

        planner: a footprint planner ("capuchin", "checkpoint", "tensile", "tandem", ...):
        iteration 1 is recorded and planned, iterations 2 and 3 run plain (3 is the reference), and every
        later iteration runs under the plan, tandem swapping and recomputing the model's tensors
        with no change to its code; plan_budget: the plan's budget, a share of the recorded
        peak ("50%") or a size ("64MiB"); without a planner, the default one ("tandem") plans.
        The results' "footprint" says what the plan saved."""
        return Job(self._runtime.join(name=name, model=model, batch_size=batch_size,
                                      iterations=iterations, priority=priority,
                                      swap_passively=swap_passively, planner=planner or "",
                                      plan_budget=plan_budget or ""))

    def change_budget(self, size):
        self._runtime.change_budget(size)

    def stop(self):
        """Every job leaves at its next iteration (job.iteration() raises Stopped, and so does a
        later join()). Safe from a signal handler."""
        self._runtime.stop()

    def results(self):
        """What was measured, as a dict: the JSON of `tandem run --json`."""
        return json.loads(self._runtime.results_json())

    def results_json(self):
        return self._runtime.results_json()

    def table(self):
        """The table `tandem run` prints."""
        return self._runtime.table()

    def write_json(self, path):
        """Writes the results to `path` whole or not at all."""
        self._runtime.write_json(path)
