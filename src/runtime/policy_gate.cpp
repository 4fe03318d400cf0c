#include "tandem/runtime/policy_gate.hpp"

#include "tandem/common/error.hpp"

namespace tandem::runtime {

using schedule::decision;

policy_gate::policy_gate(schedule::policy& policy, memory::device_pool& pool,
                         std::size_t expected_jobs, std::chrono::steady_clock::time_point origin)
    : policy_(policy),
      capabilities_(schedule::capabilities_of(policy)),
      pool_(pool),
      expected_jobs_(expected_jobs),
      start_(origin) {}

double policy_gate::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::chrono::steady_clock::time_point policy_gate::to_time_point(double seconds) const {
  return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(seconds));
}

void policy_gate::arrive(const schedule::job_info& job) {
  std::lock_guard lock(mutex_);
  TANDEM_EXPECTS(!present_.contains(job.id), usage_error,
                 "job " + std::to_string(job.id) + " arrived twice");
  ++arrived_;
  present_.insert(job.id);
  policy_.on_arrival(job, now());
  apply_limits_locked();
  notify_locked();
}

void policy_gate::depart(memory::job_id job, const std::function<void()>& release) {
  std::lock_guard lock(mutex_);
  if (present_.erase(job) == 0) return;  // already gone: departing is idempotent
  waiting_for_event_.erase(job);
  std::exception_ptr release_failure;
  if (release) {
    try {
      release();
    } catch (...) {
      release_failure = std::current_exception();
    }
  }
  policy_.on_departure(job, now());
  apply_limits_locked();
  notify_locked(job);
  if (release_failure) std::rethrow_exception(release_failure);
}

void policy_gate::change_budget(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  pool_.set_budget(bytes);
  policy_.on_budget_change(bytes, now());
  apply_limits_locked();
  notify_locked();
}

double policy_gate::wait_for_start(memory::job_id job) {
  std::unique_lock lock(mutex_);
  TANDEM_EXPECTS(present_.contains(job), usage_error,
                 "job " + std::to_string(job) + " asked to start before it arrived");
  return wait_locked(
      lock, job, [&] { return policy_.may_start(job, now()); },
      [&] { policy_.on_iteration_start(job, now()); }, true);
}

double policy_gate::wait_for_group(memory::job_id job, std::size_t group) {
  std::unique_lock lock(mutex_);
  TANDEM_EXPECTS(present_.contains(job), usage_error,
                 "job " + std::to_string(job) + " reached a group boundary before it arrived");
  TANDEM_EXPECTS(group >= 1, usage_error, "group 0 is the iteration's start: use wait_for_start");
  if (capabilities_.groups != nullptr) capabilities_.groups->on_group_end(job, group - 1, now());
  notify_locked();
  return wait_locked(
      lock, job,
      [&] {
        return capabilities_.groups != nullptr
                   ? capabilities_.groups->may_enter_group(job, group, now())
                   : decision::start();
      },
      [&] {
        if (capabilities_.groups != nullptr)
          capabilities_.groups->on_group_start(job, group, now());
      },
      false);
}

std::vector<std::size_t> policy_gate::group_boundaries(memory::job_id job) {
  std::lock_guard lock(mutex_);
  return capabilities_.groups != nullptr ? capabilities_.groups->group_boundaries(job)
                                         : std::vector<std::size_t>{};
}

double policy_gate::wait_locked(std::unique_lock<std::mutex>& lock, memory::job_id job,
                                const std::function<decision()>& ask,
                                const std::function<void()>& started, bool iteration) {
  const double asked_at = now();
  bool woken_by_event = false;  // a wait ended because something happened
  for (;;) {
    if (!closed_.empty()) throw gate_closed(closed_);
    if (stopping_) throw run_stopped("stopped at a boundary: the run was asked to stop");
    const auto verdict = ask();
    const auto seen = generation_;
    if (verdict.what == decision::verdict::start) {
      if (iteration && woken_by_event && latest_.generation == generation_ && latest_.switch_from &&
          *latest_.switch_from != job && !latest_.counted) {
        switch_samples_.push_back(now() - latest_.at_s);
        latest_.counted = true;
      }
      started();
      // A start is an event too: a policy may make others wait for it.
      notify_locked();
      return now() - asked_at;
    }
    if (verdict.what == decision::verdict::wait_until) {
      ++timed_waiters_;
      changed_.wait_until(lock, to_time_point(verdict.until_s),
                          [&] { return generation_ != seen || !closed_.empty() || stopping_; });
      --timed_waiters_;
      woken_by_event = woken_by_event || generation_ != seen;
      continue;
    }
    waiting_for_event_[job] = seen;
    if (stalled_locked()) {
      std::string names;
      for (const auto id : present_) names += (names.empty() ? "" : ", ") + pool_.job_name(id);
      closed_ = "policy '" + std::string(policy_.name()) + "' left every job (" + names +
                ") waiting with no event to come; this is a bug in the policy";
      waiting_for_event_.erase(job);
      changed_.notify_all();
      throw gate_closed(closed_);
    }
    changed_.wait(lock, [&] { return generation_ != seen || !closed_.empty() || stopping_; });
    waiting_for_event_.erase(job);
    woken_by_event = woken_by_event || generation_ != seen;
  }
}

void policy_gate::finish_iteration(memory::job_id job, const schedule::iteration_report& report) {
  std::lock_guard lock(mutex_);
  policy_.on_iteration_end(job, report, now());
  notify_locked(job);
}

void policy_gate::close(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (closed_.empty()) closed_ = reason.empty() ? "the run was cancelled" : reason;
  changed_.notify_all();
}

void policy_gate::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  changed_.notify_all();
  stop_requested_.notify_all();
}

bool policy_gate::stop_requested() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

void policy_gate::sleep_until(double seconds) {
  std::unique_lock lock(mutex_);
  stop_requested_.wait_until(lock, to_time_point(seconds), [&] { return stopping_; });
  if (stopping_) throw run_stopped("stopped while waiting: the run was asked to stop");
}

std::vector<double> policy_gate::switch_samples() const {
  std::lock_guard lock(mutex_);
  return switch_samples_;
}

std::string policy_gate::waiting_reason(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  return present_.contains(job) && capabilities_.reasons != nullptr
             ? capabilities_.reasons->waiting_reason(job)
             : std::string();
}

latency_summary policy_gate::switch_latency() const {
  return summarize_latencies(switch_samples());
}

void policy_gate::notify_locked(std::optional<memory::job_id> switch_from) {
  ++generation_;
  latest_ = {generation_, now(), switch_from, false};
  changed_.notify_all();
}

void policy_gate::apply_limits_locked() {
  for (const auto id : present_) {
    const auto limit = capabilities_.partitions != nullptr
                           ? capabilities_.partitions->memory_limit(id)
                           : std::optional<std::size_t>();
    pool_.set_job_limit(id, limit.value_or(0));
  }
}

bool policy_gate::stalled_locked() const {
  if (arrived_ < expected_jobs_ || timed_waiters_ != 0) return false;
  if (waiting_for_event_.size() != present_.size()) return false;
  for (const auto& [job, seen] : waiting_for_event_) {
    if (seen != generation_) return false;  // woken, not yet asked again
  }
  return true;
}

}  // namespace tandem::runtime
