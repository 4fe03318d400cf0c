#pragma once
// The policy interface: one implementation of each scheduling policy, driven the same way by the
// runtime (real jobs on threads) and by the simulator (jobs replayed from profiles).
//
// Contract (see docs/ARCHITECTURE.md, "Policies"):
// - A driver reports what happens (arrivals, departures, iteration starts and ends, budget
//   changes) and asks may_start() before each iteration of each job. Time is the driver's: a
//   number of seconds since the workload began, passed in; a policy never reads a clock, so the
//   simulator can run it in virtual time.
// - may_start() answers start now, wait until a time, or wait for the next event. A driver asks
//   again every waiting job after every event it reports and whenever a wait-until time passes.
// - Calls are serialized by the driver (one at a time); policies need no locking.
// - Every decision must eventually let each job start (progress): a policy may delay a job, never
//   park it forever while it is the only one that can run.
// - Group gating (Waterwave's NodeGroup; optional for drivers and policies): a policy may cut a
//   job's iteration into groups, each starting at an allocation. At each iteration start the
//   driver reads group_boundaries(job), allocation ordinals counted from the iteration's start;
//   when the job is about to make the allocation at a boundary, the driver makes the memory the
//   job freed usable (SyncAndCoalesce), reports on_group_end (an event, like an iteration end)
//   and asks may_enter_group with the same verdicts as may_start. Group 0 is the iteration
//   itself: may_start opens it, on_iteration_end closes the last group.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tandem/memory/trace.hpp"
#include "tandem/schedule/usage_curve.hpp"

namespace tandem::schedule {

using memory::job_id;

/// Device memory a job needs, in bytes of regions (what the budget counts): what it holds
/// between iterations (parameters, optimizer state: Salus's persistent memory) and the most an
/// iteration takes on top of that (its ephemeral memory, all returned when the iteration ends).
struct memory_need {
  std::size_t persistent = 0;
  std::size_t ephemeral = 0;
  friend bool operator==(const memory_need&, const memory_need&) = default;
};

/// What a driver knows about a job when it arrives.
struct job_info {
  job_id id = 0;
  std::string name;
  double arrival_s = 0;
  std::int64_t priority = 0;
  std::optional<std::int64_t> iterations;  ///< total, when the job runs a fixed count
  std::optional<double> duration_s;        ///< total seconds, when the job runs for a time
  /// Jobs with the same non-empty signature need the same memory (same model and options,
  /// batch, optimizer and kind), so a policy may reuse what it measured of one for the others.
  std::string signature;
  /// An inference job: each "iteration" serves one request (a forward pass). It asks to start
  /// only when a request is waiting and sits idle, holding its persistent memory, in between.
  bool inference = false;
  /// Known in advance (a profile, a test); empty: the policy learns it from iteration reports.
  std::optional<memory_need> need;

  /// The fields most drivers and tests set; the others keep their defaults.
  [[nodiscard]] static job_info make(job_id id, std::string name, double arrival_s,
                                     std::optional<std::int64_t> iterations = std::nullopt) {
    job_info info;
    info.id = id;
    info.name = std::move(name);
    info.arrival_s = arrival_s;
    info.iterations = iterations;
    return info;
  }
};

/// Measured by the driver for every iteration.
struct iteration_report {
  double start_s = 0;
  double end_s = 0;
  std::size_t peak_bytes = 0;  ///< the job's live bytes at their highest during the iteration
  /// The regions the job held over the iteration (times relative to start_s): what memory-aware
  /// policies learn lifespans from. Empty when the driver does not measure it.
  usage_curve held;
  /// Every allocation and free of the iteration in order with the regions held after each,
  /// when the policy asks for them (policy::wants_memory_events); empty otherwise.
  std::vector<memory_event> memory;
};

struct decision {
  enum class verdict { start, wait_until, wait_for_event };
  verdict what = verdict::start;
  double until_s = 0;  ///< for wait_until

  static decision start() { return {}; }
  static decision wait_until(double time_s) { return {verdict::wait_until, time_s}; }
  static decision wait_for_event() { return {verdict::wait_for_event, 0}; }
  friend bool operator==(const decision&, const decision&) = default;
};

/// Where a running job is within its iteration, as the driver observes it: the regions it has
/// taken or returned since the iteration started, and what it holds now.
struct job_progress_view {
  std::size_t region_events = 0;
  std::size_t held_bytes = 0;
};

/// Lets a memory-aware policy read running jobs' progress when it decides (the runtime's memory
/// monitor, or the simulator's state). Read-only; called under the driver's serialization.
class progress_source {
 public:
  virtual ~progress_source() = default;
  [[nodiscard]] virtual job_progress_view progress(job_id job) const = 0;
};

/// A named number a policy reports about its decisions (iterations delayed, seconds shifted...).
struct policy_statistic {
  std::string name;
  double value = 0;
  friend bool operator==(const policy_statistic&, const policy_statistic&) = default;
};

class policy {
 public:
  virtual ~policy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;

  // Callbacks a policy does not need keep these empty defaults.
  virtual void on_arrival(const job_info& /*job*/, double /*now_s*/) {}
  /// The job finished, failed or was removed; it will ask nothing more.
  virtual void on_departure(job_id /*job*/, double /*now_s*/) {}
  /// The driver started the iteration (after a start verdict).
  virtual void on_iteration_start(job_id /*job*/, double /*now_s*/) {}
  virtual void on_iteration_end(job_id /*job*/, const iteration_report& /*report*/,
                                double /*now_s*/) {}
  virtual void on_budget_change(std::size_t /*budget_bytes*/, double /*now_s*/) {}

  /// Gives the policy a view of running jobs' progress (nullptr: none). Policies that do not
  /// plan memory ignore it.
  virtual void set_progress_source(const progress_source* /*source*/) {}

  /// May `job` start its next iteration at `now_s`?
  [[nodiscard]] virtual decision may_start(job_id job, double now_s) = 0;

  /// Why `job` is waiting, in words a user can act on (for progress lines and logs), when the
  /// policy holds it back for a reason beyond taking turns; empty otherwise.
  [[nodiscard]] virtual std::string waiting_reason(job_id /*job*/) const { return {}; }

  /// What the policy did for `job`, also after it departed; empty for a policy with nothing
  /// to report. The runtime puts these in the results.
  [[nodiscard]] virtual std::vector<policy_statistic> job_statistics(job_id /*job*/) const {
    return {};
  }
  /// The same over all jobs.
  [[nodiscard]] virtual std::vector<policy_statistic> system_statistics() const { return {}; }

  /// Whether iteration reports should carry every allocation and free (iteration_report::
  /// memory): a cost the driver pays only for policies that learn from them.
  [[nodiscard]] virtual bool wants_memory_events() const { return false; }

  /// Allocation ordinals within an iteration (ascending, each > 0) at which `job` must ask
  /// may_enter_group before going on; empty: no gating inside iterations. Read by the driver at
  /// each iteration start; group k begins at boundaries[k - 1].
  [[nodiscard]] virtual std::vector<std::size_t> group_boundaries(job_id /*job*/) const {
    return {};
  }
  /// The job finished group `group` of its iteration and waits at the next boundary.
  virtual void on_group_end(job_id /*job*/, std::size_t /*group*/, double /*now_s*/) {}
  /// May `job` go on into group `group` (>= 1) of its iteration at `now_s`?
  [[nodiscard]] virtual decision may_enter_group(job_id /*job*/, std::size_t /*group*/,
                                                 double /*now_s*/) {
    return decision::start();
  }
  /// The driver let the job into group `group` (after a start verdict).
  virtual void on_group_start(job_id /*job*/, std::size_t /*group*/, double /*now_s*/) {}

  /// Bytes of regions `job` may hold, when the policy partitions memory (static); empty for no
  /// per-job limit. Asked after on_arrival and after every budget change.
  [[nodiscard]] virtual std::optional<std::size_t> memory_limit(job_id job) const {
    static_cast<void>(job);
    return std::nullopt;
  }
};

}  // namespace tandem::schedule
