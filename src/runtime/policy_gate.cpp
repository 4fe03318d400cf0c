#include "tandem/runtime/policy_gate.hpp"

#include "tandem/common/error.hpp"
#include "tandem/memory/out_of_memory.hpp"

namespace tandem::runtime {

double policy_gate::wall_clock::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

policy_gate::policy_gate(schedule::policy& policy, memory::device_pool& pool,
                         std::size_t expected_jobs, std::chrono::steady_clock::time_point origin)
    : pool_(pool),
      start_(origin),
      clock_(origin),
      driver_(policy, clock_, expected_jobs,
              [this](memory::job_id job, std::optional<std::size_t> limit) {
                pool_.set_job_limit(job, limit.value_or(0));
              }) {}

double policy_gate::now() const {
  return clock_.now();
}

std::chrono::steady_clock::time_point policy_gate::to_time_point(double seconds) const {
  return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(seconds));
}

void policy_gate::arrive(const schedule::job_info& job) {
  std::lock_guard lock(mutex_);
  driver_.arrive(job);
  dispatch_locked();
}

void policy_gate::depart(memory::job_id job, const std::function<void()>& release) {
  std::lock_guard lock(mutex_);
  if (!driver_.present(job)) return;  // already gone: departing is idempotent
  granted_.erase(job);
  variants_.erase(job);
  std::exception_ptr release_failure;
  if (release) {
    try {
      release();
    } catch (...) {
      release_failure = std::current_exception();
    }
  }
  driver_.depart(job);
  dispatch_locked();
  if (release_failure) std::rethrow_exception(release_failure);
}

void policy_gate::change_budget(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  pool_.set_budget(bytes);
  driver_.change_budget(bytes);
  dispatch_locked();
}

double policy_gate::wait_for_start(memory::job_id job) {
  std::unique_lock lock(mutex_);
  TANDEM_EXPECTS(driver_.present(job), usage_error,
                 "job " + std::to_string(job) + " asked to start before it arrived");
  if (!closed_.empty()) throw gate_closed(closed_);
  if (stop_source_.stop_requested())
    throw run_stopped("stopped at a boundary: the run was asked to stop");
  driver_.request_start(job);
  dispatch_locked();
  return wait_for_grant_locked(lock, job);
}

void policy_gate::offer_variants(memory::job_id job,
                                 std::vector<schedule::footprint_variant> variants) {
  std::lock_guard lock(mutex_);
  driver_.offer_variants(job, std::move(variants));
  dispatch_locked();
}

std::size_t policy_gate::granted_variant(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  const auto found = variants_.find(job);
  return found == variants_.end() ? 0 : found->second;
}

double policy_gate::wait_for_group(memory::job_id job, std::size_t group, bool restartable) {
  std::unique_lock lock(mutex_);
  TANDEM_EXPECTS(driver_.present(job), usage_error,
                 "job " + std::to_string(job) + " reached a group boundary before it arrived");
  TANDEM_EXPECTS(group >= 1, usage_error, "group 0 is the iteration's start: use wait_for_start");
  if (!closed_.empty()) throw gate_closed(closed_);
  if (stop_source_.stop_requested())
    throw run_stopped("stopped at a boundary: the run was asked to stop");
  // A job letting go of its iteration does not wait at a boundary: the others wait for its
  // regions, so its group might never come (a failure or restart thrown inside an operation's
  // callback, which libtorch swallows, leaves the job running on to here).
  if (driver_.restart_owed(job)) {
    throw iteration_restarted(
        "the iteration lets go at its group boundary: it owes a restart (every running "
        "iteration waited for another)");
  }
  if (driver_.lets_go(job)) {
    memory::oom_report report;
    report.job = job;
    report.cause =
        "no wait would bring the memory the iteration asked for (every running iteration waited "
        "for another, none could restart or make room); it fails at its group boundary rather "
        "than wait there";
    throw memory::out_of_memory_error(report);
  }
  driver_.request_group(job, group, restartable);
  dispatch_locked();
  return wait_for_grant_locked(lock, job);
}

std::vector<std::size_t> policy_gate::group_boundaries(memory::job_id job) {
  std::lock_guard lock(mutex_);
  const auto& capabilities = driver_.capabilities();
  return capabilities.groups != nullptr ? capabilities.groups->group_boundaries(job)
                                        : std::vector<std::size_t>{};
}

double policy_gate::wait_for_grant_locked(std::unique_lock<std::mutex>& lock, memory::job_id job) {
  for (;;) {
    if (const auto found = granted_.find(job); found != granted_.end()) {
      const auto given = found->second;
      granted_.erase(found);
      if (given.group == 0) variants_[job] = given.variant;
      // Measured here, on the job's own thread: waking it is part of what a switch costs.
      if (given.switch_from_s) switch_samples_.push_back(now() - *given.switch_from_s);
      return given.waited_s;
    }
    const auto withdraw = [&] { driver_.withdraw(job); };
    if (driver_.restart_owed(job)) {
      // Told to let go at its group boundary: others wait for its regions.
      withdraw();
      throw iteration_restarted(
          "the iteration lets go at its group boundary: every running iteration waited for "
          "another, and none waiting for regions could restart");
    }
    if (!closed_.empty()) {
      withdraw();
      throw gate_closed(closed_);
    }
    if (stop_source_.stop_requested()) {
      withdraw();
      throw run_stopped("stopped at a boundary: the run was asked to stop");
    }
    if (const auto wake = driver_.wake_time(job)) {
      if (changed_.wait_until(lock, to_time_point(*wake)) == std::cv_status::timeout) {
        driver_.wake_due();
        dispatch_locked();
      }
    } else {
      changed_.wait(lock);
    }
  }
}

void policy_gate::dispatch_locked() {
  for (const auto& given : driver_.take_grants()) granted_[given.job] = given;
  if (closed_.empty() && driver_.stalled()) {
    closed_ = driver_.stall_message([&](memory::job_id id) { return pool_.job_name(id); });
  }
  changed_.notify_all();
}

void policy_gate::finish_iteration(memory::job_id job, const schedule::iteration_report& report) {
  std::lock_guard lock(mutex_);
  driver_.finish_iteration(job, report);
  dispatch_locked();
}

void policy_gate::close(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (closed_.empty()) closed_ = reason.empty() ? "the run was cancelled" : reason;
  changed_.notify_all();
}

void policy_gate::stop() {
  // Requested under the lock, so that a waiter that checked it there cannot miss the wake-up.
  std::lock_guard lock(mutex_);
  stop_source_.request_stop();
  changed_.notify_all();
  stop_requested_.notify_all();
}

bool policy_gate::stop_requested() const {
  return stop_source_.stop_requested();
}

void policy_gate::sleep_until(double seconds) {
  std::unique_lock lock(mutex_);
  stop_requested_.wait_until(lock, to_time_point(seconds),
                             [&] { return stop_source_.stop_requested(); });
  if (stop_source_.stop_requested())
    throw run_stopped("stopped while waiting: the run was asked to stop");
}

schedule::memory_wait_verdict policy_gate::memory_wait(memory::job_id job, bool restartable,
                                                       std::size_t refused_bytes,
                                                       std::size_t free_in_own_regions,
                                                       bool can_make_room, bool falls_back) {
  std::lock_guard lock(mutex_);
  const auto verdict = driver_.memory_wait(job, restartable, refused_bytes, free_in_own_regions,
                                           can_make_room, falls_back);
  // A job told to let go at a group boundary waits for its grant: wake it to restart there.
  if (!driver_.take_boundary_restarts().empty()) changed_.notify_all();
  return verdict;
}

bool policy_gate::restart_owed(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  return driver_.restart_owed(job);
}

void policy_gate::inject_restart(memory::job_id job) {
  std::lock_guard lock(mutex_);
  driver_.owe_restart(job);
}

void policy_gate::restart_iteration(memory::job_id job, schedule::iteration_report report) {
  std::lock_guard lock(mutex_);
  driver_.restart_iteration(job, std::move(report));
  dispatch_locked();
}

void policy_gate::memory_wait_ended(memory::job_id job) noexcept {
  std::lock_guard lock(mutex_);
  driver_.memory_wait_ended(job);
}

double policy_gate::memory_waited_s(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  return driver_.memory_waited_s(job);
}

void policy_gate::set_budget_schedule(std::vector<schedule::policy_driver::budget_change> changes) {
  std::lock_guard lock(mutex_);
  driver_.set_budget_schedule(std::move(changes),
                              [this](std::size_t bytes) { pool_.set_budget(bytes); });
}

std::optional<double> policy_gate::next_budget_change() const {
  std::lock_guard lock(mutex_);
  return driver_.next_budget_change();
}

std::vector<schedule::policy_driver::budget_change> policy_gate::apply_due_budget_changes() {
  std::lock_guard lock(mutex_);
  auto applied = driver_.apply_due_budget_changes();
  dispatch_locked();
  return applied;
}

std::vector<double> policy_gate::switch_samples() const {
  std::lock_guard lock(mutex_);
  return switch_samples_;
}

std::string policy_gate::waiting_reason(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  const auto* reasons = driver_.capabilities().reasons;
  return driver_.present(job) && reasons != nullptr ? reasons->waiting_reason(job) : std::string();
}

std::string policy_gate::held_up_by(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  return driver_.present(job) ? driver_.held_up_by(job) : std::string();
}

latency_summary policy_gate::switch_latency() const {
  return summarize_latencies(switch_samples());
}

}  // namespace tandem::runtime
