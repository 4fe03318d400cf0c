#pragma once
// tandem as a library: your own libtorch training loops, on your own threads, side by side on one
// device under one of tandem's policies. The runtime owns the memory (it becomes libtorch's CPU
// allocator while it lives); each loop joins it as a job and wraps each iteration in a scope the
// policy gates:
//
//   tandem::api::runtime rt({.budget = "1GiB", .policy = "scrooge"});
//   ...on each job's thread:
//   auto job = rt.join("trial-1");                         // before the model: it outlives it
//   Net net;                                               // your own module...
//   { auto persistent = job.persistent(); net = ...; optimizer = ...; }
//   for (int i = 0; i < n; ++i) {
//     auto step = job.iteration();                         // waits until the policy lets it run
//     ...forward, backward, optimizer step...
//     step.report_loss(loss.item<double>());
//   }                                                      // the scope's end reports the iteration
//
// A job's calls belong to the thread that joined (libtorch's allocations are tied to the job
// through that thread). An exception that leaves an iteration fails the job: it leaves the
// runtime, its memory goes back, and no other job is touched. Results come as tandem run's: the
// same table and JSON (docs/results-schema.md).

#include <c10/core/Device.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "tandem/common/error.hpp"
#include "tandem/runtime/policy_gate.hpp"
#include "tandem/runtime/restartable_scope.hpp"
#include "tandem/runtime/results.hpp"

namespace tandem::torch_support {
class kind_scope;
}

namespace torch::nn {
class Module;
}

namespace tandem::api {

/// The device and the policy: the keys of a workload file's [device] and [policy] tables, read
/// by the same code, with the same defaults and checks.
struct runtime_options {
  std::string budget;    ///< what the jobs may hold together, e.g. "1GiB" (required)
  std::string capacity;  ///< what the pool reserves; empty: the budget
  /// The pool's unit of sharing (Zico's regions); empty: the pool's default, 64 MiB. Budgets
  /// of a few regions want smaller ones, e.g. "2MiB".
  std::string region_size;
  std::string policy = "scrooge";
  std::map<std::string, double> policy_options;  ///< as [policy] options, e.g. {"lanes", 2}
  /// "cpu", or "cuda" / "cuda:N" in a build against a CUDA libtorch: each job's work then runs
  /// on its own CUDA stream (make it current with job::device's tensors: the job's thread has
  /// it current from join on), and the pool is libtorch's CUDA allocator.
  std::string device = "cpu";
  std::string copy_bandwidth = "auto";  ///< the CPU backend's simulated copy engine
  /// CUDA: Zico's in-flight limit (§6.1), the allocating operations a job's host may queue
  /// ahead of its stream; 0: none.
  std::size_t inflight_limit = 0;
  /// How many jobs will join, when known: a policy waiting for a later arrival is then told from
  /// one that stalled, and `static` needs it to size its partitions. 0: unknown.
  std::size_t expected_jobs = 0;
  std::ostream* timeline = nullptr;  ///< the memory timeline as CSV, as `tandem run --timeline`
};

/// What a policy is told of a job. Jobs with the same model and batch size are taken to be alike
/// in memory (Waterwave pairs them, scrooge shares what it learned).
struct job_options {
  std::string model = "custom";
  std::int64_t batch_size = 0;             ///< samples per iteration (0: no samples/s figures)
  std::optional<std::int64_t> iterations;  ///< how many it will run, when known (SRTF uses it)
  std::int64_t priority = 0;
  /// Capuchin's passive mode (Peng et al., ASPLOS'20, §4.2; torch/passive_swapper.hpp): when an
  /// allocation of an iteration finds no memory, the job's least recently used tensors go to
  /// host memory over the device's copy engine and come back before any operation reads them,
  /// so the loop trains under a budget below its peak with no change to its model. Costs the
  /// copies (an iteration's record says how much moved) and a callback per operation.
  bool swap_passively = false;
  /// A footprint planner, as `tandem plan` names them ("capuchin", "checkpoint", "tensile",
  /// "tandem", ...; `tandem plan --help` lists them); empty: none. The loop's iteration 1 is
  /// recorded as a tensor access sequence (operations, the tensors each makes and reads, phases
  /// inferred), planned, and every iteration from 4 on runs under the plan, its swaps and
  /// recomputations carried out by tandem's executor with no change to the model; iterations 2
  /// and 3 run plain, 3 as the reference the results measure the plan against
  /// (docs/ARCHITECTURE.md, "Footprint reduction"). The iterations before the plan, and the plan
  /// when the budget proves short, swap passively. Needs the same batch and code path in every
  /// iteration: one that allocates differently stops being planned for the rest of it (counted as
  /// diverged).
  std::string planner;
  /// The budget the plan is made for: a share of the recorded iteration's peak ("50%") or a
  /// size ("64MiB"); empty: the planner's own choice with no budget. Without `planner`, the
  /// default planner (footprint::default_planner, tandem's search) makes the plan.
  std::string plan_budget;
};

/// What iteration() (and join()) throws once the runtime was stopped: leave the loop, the job
/// has left.
using stopped = tandem::runtime::run_stopped;

/// A part of an iteration the policy may cut short (iteration_scope::restartable): while it
/// lives, a wait for memory that every running iteration shares may end with this iteration
/// letting go (an allocation throws) instead of a job failing. Cover the forward pass with it,
/// not the backward pass or the optimizer step (those cannot be undone), and run the iteration
/// through job::run_iteration, which runs it again.
class restartable_part {
 public:
  ~restartable_part();
  restartable_part(restartable_part&&) noexcept;
  restartable_part& operator=(restartable_part&&) = delete;
  restartable_part(const restartable_part&) = delete;
  restartable_part& operator=(const restartable_part&) = delete;

 private:
  friend class iteration_scope;
  explicit restartable_part(bool marks);
  std::unique_ptr<tandem::runtime::restartable_scope> scope_;  ///< none: nothing is marked
};

class runtime;
class job;

/// Tags the joined thread's allocations as persistent (weights, optimizer state) while it lives.
class persistent_scope {
 public:
  ~persistent_scope();
  persistent_scope(persistent_scope&&) noexcept;
  persistent_scope& operator=(persistent_scope&&) = delete;
  persistent_scope(const persistent_scope&) = delete;
  persistent_scope& operator=(const persistent_scope&) = delete;

 private:
  friend class job;
  persistent_scope();
  std::unique_ptr<torch_support::kind_scope> scope_;
};

/// One iteration of a job: made when the policy lets it start, ended (measured and reported to
/// the policy) by end() or when the scope ends.
class iteration_scope {
 public:
  ~iteration_scope();
  iteration_scope(iteration_scope&& other) noexcept;
  iteration_scope& operator=(iteration_scope&&) = delete;
  iteration_scope(const iteration_scope&) = delete;
  iteration_scope& operator=(const iteration_scope&) = delete;

  /// The iteration's loss, for the results' first and last loss.
  void report_loss(double loss);
  /// Ends the iteration now (the destructor does it otherwise).
  void end();
  /// Ends it as failed: the job fails with `reason` and leaves the runtime.
  void fail(const std::string& reason);
  /// The part of the iteration that may be cut short (see restartable_part). `model`: its
  /// buffers (batch norm's running statistics) are saved now and written back if the iteration
  /// is cut, so that its rerun computes what a run never cut would.
  [[nodiscard]] restartable_part restartable(torch::nn::Module* model = nullptr);
  /// Ends it after an exception (`why`) left it: true when the policy had cut it short in a
  /// restartable part (reported as restarted; the job goes on and may run it again), else the
  /// job fails with `why`. job::run_iteration does this for you.
  bool end_after_exception(const std::string& why);

 private:
  friend class job;
  explicit iteration_scope(job& owner);
  job* job_;
  int exceptions_;  ///< uncaught exceptions when it began: more at its end mean it failed
};

/// A job joined to a runtime, used from the thread that joined. Leaves when destroyed (or by
/// leave()); make it before your model so that it outlives the model's tensors.
class job {
 public:
  ~job();
  job(job&& other) noexcept;
  job& operator=(job&&) = delete;
  job(const job&) = delete;
  job& operator=(const job&) = delete;

  /// Waits until the policy lets the job start its next iteration. Throws `stopped`
  /// once the runtime was stopped, usage_error after the job failed or left.
  [[nodiscard]] iteration_scope iteration();
  /// Runs one iteration: `body` is called with it, and called again, on a new iteration, each
  /// time the policy cut it short in a restartable part (the job's `restarts` count them).
  /// Anything else that leaves `body` fails the job and is rethrown.
  void run_iteration(const std::function<void(iteration_scope&)>& body);
  /// Tags what the thread allocates while the scope lives as persistent memory.
  [[nodiscard]] persistent_scope persistent();
  /// Leaves the runtime: completed, or failed when an iteration failed. Idempotent.
  void leave();
  /// Fails the job with `reason` and leaves.
  void fail(const std::string& reason);

  [[nodiscard]] const std::string& name() const;
  [[nodiscard]] std::int64_t iterations() const;  ///< ended so far
  /// Where the job's model and batches belong: the CPU, or the runtime's CUDA device, whose
  /// current stream on the joined thread is the job's own.
  [[nodiscard]] c10::Device device() const;

  struct state;  ///< the job's machinery (binding, classifier, measures); in the implementation

 private:
  friend class runtime;
  friend class iteration_scope;
  explicit job(std::unique_ptr<state> s);
  /// Ends the iteration under way; with `failure`, it fails the job, unless the policy told the
  /// iteration to let go: then it is reported as restarted and true comes back.
  bool end_iteration(std::optional<std::string> failure);
  std::unique_ptr<state> state_;
};

class runtime {
 public:
  /// Builds the device, the pool and the policy. Throws config_error naming the option for bad
  /// options (a budget or capacity above what the device can reserve among them), usage_error
  /// while another runtime (or `tandem run`) owns libtorch's allocator in this process.
  explicit runtime(const runtime_options& options);
  /// Jobs still joined keep the device alive until they leave.
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// The calling thread joins as job `name` (names are unique within a runtime). Throws
  /// config_error for bad options, usage_error for a taken name or a thread already joined,
  /// `stopped` after stop(). A join that throws leaves nothing behind.
  [[nodiscard]] job join(const std::string& name, const job_options& options = {});
  /// Changes the budget while jobs run, as a workload's budget_schedule does (e.g. "512MiB").
  void change_budget(std::string_view size);
  /// Asks every job to leave at its next iteration boundary (iteration() throws `stopped`);
  /// what they measured is kept. Safe from any thread, e.g. a signal watcher.
  void stop();

  /// What was measured, as `tandem run` reports it, for the jobs that have left (every job,
  /// once all have). Still answers after close().
  [[nodiscard]] tandem::runtime::run_result results() const;
  /// Takes the device down now (the destructor does otherwise), so that another runtime can be
  /// made in this process. After stop() it first waits for the jobs of other threads to leave
  /// (at their next iteration); otherwise it throws usage_error while a job has not left, as it
  /// does for a job of the calling thread. Idempotent.
  void close();

  struct shared;  ///< the device and the jobs' records; in the implementation

 private:
  std::shared_ptr<shared> shared_;
};

}  // namespace tandem::api
