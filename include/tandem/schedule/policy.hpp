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
// - Everything only some policies need is an optional capability, one small interface each
//   (group_gating, memory_partitioning, explains_waiting, reports_statistics, reads_progress,
//   borrow_arbiter), which a driver discovers once with capabilities_of
//   (policy_capabilities.hpp). The core below is what every policy answers.

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
  /// when the policy asks for them (group_gating::wants_memory_events); empty otherwise.
  std::vector<memory_event> memory;
  /// The iteration was cut short and will run again (policy_driver.hpp, "Memory waits"): it
  /// returned what it took so that iterations waiting for it could go on. Not a whole
  /// iteration: `held` stops at the cut, so it is no measurement to learn a need from.
  bool restarted = false;
  /// Bytes the job swapped out on demand in it to make room (a planned job's passive swapping,
  /// where no wait would have brought memory): the iteration did not fit beside what the others
  /// held, and its length includes those copies (docs/ARCHITECTURE.md, "Passive mode").
  std::size_t swapped_on_demand_bytes = 0;
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

  /// May `job` start its next iteration at `now_s`?
  [[nodiscard]] virtual decision may_start(job_id job, double now_s) = 0;
};

}  // namespace tandem::schedule
