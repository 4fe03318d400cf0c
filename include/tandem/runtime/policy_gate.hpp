#pragma once
// Drives a policy in real time for jobs that train on their own threads: the runtime's side of
// the policy interface (the simulator drives the same policies in virtual time).
//
// Each job's thread calls wait_for_start() before every iteration and finish_iteration() after
// it; the session reports arrivals and departures. Every call is serialized under one mutex, as
// the policy contract requires, and every event wakes the waiting jobs so that they ask the
// policy again. A job waits on its own thread, never inside libtorch (see ARCHITECTURE.md,
// "The runtime").
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
#include <set>
#include <string>
#include <vector>

#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/schedule/policy_capabilities.hpp"

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

  /// Group gating (policy.hpp): reports that `job` finished group `group - 1` of its iteration,
  /// blocks until the policy lets it into group `group` (>= 1), reports the entry and returns
  /// the seconds spent waiting. Throws gate_closed.
  double wait_for_group(memory::job_id job, std::size_t group);
  /// The policy's group boundaries for `job`'s next iteration (empty: no gating).
  [[nodiscard]] std::vector<std::size_t> group_boundaries(memory::job_id job);

  /// Wakes every waiting job with gate_closed(reason); later waits throw at once.
  void close(const std::string& reason);

  /// Asks every job to leave at its next boundary: waits under way and every later one throw
  /// run_stopped, so no iteration or group starts after it (one under way runs to its end).
  /// Idempotent; safe from any thread (the session calls it from a stop request).
  void stop();
  [[nodiscard]] bool stop_requested() const;
  /// Sleeps until `seconds` (gate time) like std::this_thread::sleep_until, but throws
  /// run_stopped as soon as stop() is called, so that no job sleeps through a stop.
  void sleep_until(double seconds);

  /// The job-switch samples so far (see above), in seconds, in the order they happened.
  [[nodiscard]] std::vector<double> switch_samples() const;
  /// Their summary: count, mean, percentiles, largest.
  [[nodiscard]] latency_summary switch_latency() const;

  /// Why the policy holds `job` back beyond taking turns (explains_waiting::waiting_reason); empty
  /// when it does not say.
  [[nodiscard]] std::string waiting_reason(memory::job_id job) const;

 private:
  // Asks until the verdict is start, then runs `started`; the waiting every ask shares.
  // `iteration`: a start of an iteration (not a group), where job switches are measured.
  double wait_locked(std::unique_lock<std::mutex>& lock, memory::job_id job,
                     const std::function<schedule::decision()>& ask,
                     const std::function<void()>& started, bool iteration);
  // An event happened: every waiting job asks again. `switch_from`: the job whose iteration end
  // or departure it is, when a start it allows would be a job switch.
  void notify_locked(std::optional<memory::job_id> switch_from = std::nullopt);
  void apply_limits_locked();  // the policy's memory limits onto the pool
  [[nodiscard]] bool stalled_locked() const;

  schedule::policy& policy_;
  const schedule::policy_capabilities capabilities_;  // found once, when the gate is made
  memory::device_pool& pool_;
  const std::size_t expected_jobs_;
  const std::chrono::steady_clock::time_point start_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;      // counts events; a waiter re-asks when it moves
  std::size_t arrived_ = 0;           // arrivals reported so far
  std::set<memory::job_id> present_;  // arrived, not departed
  // Parked until the next event, with the event count each asked at: only when every present
  // job asked after the latest event is nobody left to move things on.
  std::map<memory::job_id, std::uint64_t> waiting_for_event_;
  std::size_t timed_waiters_ = 0;  // parked until a time: they will ask again
  std::string closed_;             // non-empty once closed: the reason
  bool stopping_ = false;          // stop() was called
  // Wakes sleep_until only, so that a sleeper is not woken by every event.
  std::condition_variable stop_requested_;

  // The latest event, for switch samples.
  struct event_mark {
    std::uint64_t generation = 0;
    double at_s = 0;
    std::optional<memory::job_id> switch_from;  // set for an iteration end or departure
    bool counted = false;                       // a start after it was sampled
  };
  event_mark latest_;
  std::vector<double> switch_samples_;
};

}  // namespace tandem::runtime
