#pragma once
// Drives a policy in real time for jobs that train on their own threads: the runtime's side of
// the policy interface (the simulator drives the same policies in virtual time).
//
// Each job's thread calls wait_for_start() before every iteration and finish_iteration() after
// it; the session reports arrivals and departures. The contract itself (when to ask whom, in
// what order, stalls, limits) is schedule::policy_driver, the same object the simulator drives;
// the gate adds threads: every call is serialized under one mutex, and a job whose wait the
// driver grants is woken. A job waits on its own thread, never inside libtorch (see
// ARCHITECTURE.md, "The runtime").
//
// Time is seconds since the gate was made (steady clock).
//
// Job switches: Salus's claim is that switching jobs at iteration boundaries costs only the
// scheduling decision. The gate measures it: when a job is let start an iteration after waiting
// and woken by an event, and the latest event is another job's iteration end or departure, the
// time from that event to the start is one sample (only the first start after each such event
// counts). It covers waking the job's thread, the policy's decision and reporting the start.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/schedule/policy_capabilities.hpp"
#include "tandem/schedule/policy_driver.hpp"

namespace tandem::runtime {

/// Thrown to a waiting job when the gate can no longer let it start: the policy left every
/// present job waiting with no event to come (a policy bug), or the run was cancelled.
class gate_closed : public error {
 public:
  using error::error;
};

/// Thrown to a job at its next boundary (an iteration's or a group's start, a request's
/// arrival) once the run was asked to stop (policy_gate::stop): the job leaves there, its
/// memory released through depart as always, and keeps what it measured.
class run_stopped : public error {
 public:
  using error::error;
};

/// Thrown to a job's thread from inside an allocation when its iteration must let go
/// (policy_driver.hpp, "Memory waits"): the job rolls back to the iteration's start, reports
/// it with restart_iteration and asks to start it again. Only where the job said it can roll
/// back (restartable_scope.hpp).
class iteration_restarted : public error {
 public:
  using error::error;
};

class policy_gate {
 public:
  /// `expected_jobs`: how many arrivals the session will report, so that the gate can tell a
  /// policy that waits for a later arrival from one that will never let anyone run. The pool
  /// receives the policy's memory limits (static partitions). `origin` is time zero.
  policy_gate(schedule::policy& policy, memory::device_pool& pool, std::size_t expected_jobs,
              std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now());

  [[nodiscard]] double now() const;
  [[nodiscard]] std::chrono::steady_clock::time_point to_time_point(double seconds) const;

  void arrive(const schedule::job_info& job);
  /// The job leaves. `release` (e.g. the pool's remove_job) runs inside the same step, before
  /// the policy hears of it, so no other call sees a job that is half gone; if it throws, the
  /// departure still happens and the exception is rethrown afterwards.
  void depart(memory::job_id job, const std::function<void()>& release = {});
  void change_budget(std::size_t bytes);

  /// Blocks until the policy lets `job` start an iteration, reports the start and returns the
  /// seconds spent waiting. Throws gate_closed (see above).
  double wait_for_start(memory::job_id job);
  void finish_iteration(memory::job_id job, const schedule::iteration_report& report);
  /// The ways `job` can run its iterations (schedule::chooses_footprint); ignored by a policy
  /// that does not choose among them.
  void offer_variants(memory::job_id job, std::vector<schedule::footprint_variant> variants);
  /// The footprint variant of the iteration start `job` was last granted (0: plain).
  [[nodiscard]] std::size_t granted_variant(memory::job_id job) const;

  /// Group gating (policy.hpp): reports that `job` finished group `group - 1` of its iteration,
  /// blocks until the policy lets it into group `group` (>= 1), reports the entry and returns
  /// the seconds spent waiting. Throws gate_closed; and for a job letting go of its iteration,
  /// which must not wait (the others wait for its regions), iteration_restarted when it owes a
  /// restart, out_of_memory_error when it was told to give up. `restartable`: whether the job
  /// can let go of its iteration here (restartable_scope.hpp, may_restart_here); only then may
  /// the policy driver choose it to, at this boundary, for another's memory wait.
  double wait_for_group(memory::job_id job, std::size_t group, bool restartable);
  /// The policy's group boundaries for `job`'s next iteration (empty: no gating).
  [[nodiscard]] std::vector<std::size_t> group_boundaries(memory::job_id job);

  /// Wakes every waiting job with gate_closed(reason); later waits throw at once.
  void close(const std::string& reason);

  /// Asks every job to leave at its next boundary: waits under way and every later one throw
  /// run_stopped, so no iteration or group starts after it (one under way runs to its end).
  /// Idempotent; safe from any thread (the session calls it from a stop request).
  void stop();
  [[nodiscard]] bool stop_requested() const;
  /// Requested by stop(): also for work between boundaries that a stop should cut short (a
  /// planner's search, which then ends with its best plan).
  [[nodiscard]] std::stop_token stop_token() const { return stop_source_.get_token(); }
  /// Sleeps until `seconds` (gate time) like std::this_thread::sleep_until, but throws
  /// run_stopped as soon as stop() is called, so that no job sleeps through a stop.
  void sleep_until(double seconds);

  /// Memory waits (policy_driver.hpp): `job`'s allocation of `refused_bytes` found no memory,
  /// though its own regions hold `free_in_own_regions` unused; `restartable`: whether its
  /// iteration can be rolled back here. On keep_waiting it waits for regions (and is counted as
  /// waiting until memory_wait_ended); on restart_iteration the gate notes that the job owes a
  /// restart_iteration. `can_make_room`: whether it may free some of its own memory instead;
  /// `falls_back`: whether a give_up serves it elsewhere (another class's free block).
  [[nodiscard]] schedule::memory_wait_verdict memory_wait(memory::job_id job, bool restartable,
                                                          std::size_t refused_bytes,
                                                          std::size_t free_in_own_regions = 0,
                                                          bool can_make_room = false,
                                                          bool falls_back = false);
  void memory_wait_ended(memory::job_id job) noexcept;
  /// Seconds `job` has waited for regions so far (policy_driver::memory_waited_s).
  [[nodiscard]] double memory_waited_s(memory::job_id job) const;
  /// Whether `job` was told to restart its iteration and has not reported it yet: its thread
  /// asks when an iteration throws, since libtorch may rethrow iteration_restarted as its own
  /// error type.
  [[nodiscard]] bool restart_owed(memory::job_id job) const;
  /// `job` rolled its iteration back: it ends as restarted (`report`, measured up to the cut).
  void restart_iteration(memory::job_id job, schedule::iteration_report report);
  /// Makes `job` owe a restart as if the driver had told it to let go (injected faults).
  void inject_restart(memory::job_id job);

  /// The workload's timed budget changes; each one due goes to the pool and then the policy
  /// when apply_due_budget_changes() is called at or after its time.
  void set_budget_schedule(std::vector<schedule::policy_driver::budget_change> changes);
  [[nodiscard]] std::optional<double> next_budget_change() const;
  /// Applies the changes due by now; returns them with the time each took effect.
  std::vector<schedule::policy_driver::budget_change> apply_due_budget_changes();

  /// The job-switch samples so far (see above), in seconds, in the order they happened.
  [[nodiscard]] std::vector<double> switch_samples() const;
  /// Their summary: count, mean, percentiles, largest.
  [[nodiscard]] latency_summary switch_latency() const;

  /// Why the policy holds `job` back beyond taking turns (explains_waiting::waiting_reason); empty
  /// when it does not say.
  [[nodiscard]] std::string waiting_reason(memory::job_id job) const;
  /// What holds up `job`'s iteration under way (policy_driver::held_up_by); empty when nothing.
  [[nodiscard]] std::string held_up_by(memory::job_id job) const;

 private:
  /// The gate's clock for the driver: seconds since the origin.
  class wall_clock final : public schedule::driver_clock {
   public:
    explicit wall_clock(std::chrono::steady_clock::time_point origin) : origin_(origin) {}
    [[nodiscard]] double now() const override;

   private:
    std::chrono::steady_clock::time_point origin_;
  };

  /// Blocks until the driver granted `job` (it asked already), waking it at its wait-until
  /// times; returns the seconds it waited. Throws gate_closed or run_stopped.
  double wait_for_grant_locked(std::unique_lock<std::mutex>& lock, memory::job_id job);
  /// Takes the driver's grants for their threads and wakes them; closes the gate on a stall.
  void dispatch_locked();

  memory::device_pool& pool_;
  const std::chrono::steady_clock::time_point start_;
  wall_clock clock_;

  mutable std::mutex mutex_;
  schedule::policy_driver driver_;  // guarded by mutex_: the contract, shared with the simulator
  std::condition_variable changed_;
  std::map<memory::job_id, schedule::grant> granted_;  // not yet taken by their threads
  std::map<memory::job_id, std::size_t> variants_;     // of each job's latest iteration start
  std::string closed_;                                 // non-empty once closed: the reason
  // Wakes sleep_until only, so that a sleeper is not woken by every event.
  std::condition_variable stop_requested_;
  std::stop_source stop_source_;  // requested by stop(), under mutex_
  std::vector<double> switch_samples_;
};

}  // namespace tandem::runtime
