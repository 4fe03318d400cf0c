#include "tandem/schedule/baselines.hpp"

#include <algorithm>
#include <memory>

#include "tandem/common/error.hpp"

namespace tandem::schedule {

// exclusive -----------------------------------------------------------------------------------

void exclusive_policy::on_arrival(const job_info& job, double) {
  queue_.push_back(job.id);
}

void exclusive_policy::on_departure(job_id job, double) {
  queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
}

decision exclusive_policy::may_start(job_id job, double) {
  return !queue_.empty() && queue_.front() == job ? decision::start() : decision::wait_for_event();
}

// temporal ------------------------------------------------------------------------------------

void temporal_policy::on_arrival(const job_info& job, double) {
  jobs_.insert(job.id);
}

void temporal_policy::on_departure(job_id job, double) {
  jobs_.erase(job);
  asking_.erase(job);
  if (running_ == job) running_.reset();
}

decision temporal_policy::may_start(job_id job, double) {
  if (running_ == job) return decision::start();
  asking_.insert(job);  // remembered while another job runs, so that its turn comes
  if (running_) return decision::wait_for_event();
  // The next asking job after the last one to run, in id order, wrapping around: every job
  // gets its turn, and a job that is not asking (busy on the host) does not hold the others up.
  auto next = last_ ? asking_.upper_bound(*last_) : asking_.begin();
  if (next == asking_.end()) next = asking_.begin();
  if (*next != job) return decision::wait_for_event();
  running_ = job;  // a start verdict reserves the device until the iteration ends
  asking_.erase(job);
  return decision::start();
}

void temporal_policy::on_iteration_start(job_id job, double) {
  TANDEM_ASSERT(running_ == job, "temporal: an iteration started without a start verdict");
}

void temporal_policy::on_iteration_end(job_id job, const iteration_report&, double) {
  if (running_ == job) running_.reset();
  last_ = job;
}

// static --------------------------------------------------------------------------------------

static_partition_policy::static_partition_policy(std::size_t budget_bytes,
                                                 std::size_t expected_jobs)
    : budget_(budget_bytes), expected_jobs_(expected_jobs) {
  TANDEM_EXPECTS(expected_jobs > 0, config_error,
                 "the static policy needs the number of jobs to split the budget among");
}

void static_partition_policy::on_arrival(const job_info& job, double) {
  partitions_[job.id] = budget_ / expected_jobs_;
}

void static_partition_policy::on_departure(job_id job, double) {
  partitions_.erase(job);
}

void static_partition_policy::on_budget_change(std::size_t budget_bytes, double) {
  budget_ = budget_bytes;
  for (auto& [job, bytes] : partitions_) bytes = budget_ / expected_jobs_;
}

std::optional<std::size_t> static_partition_policy::memory_limit(job_id job) const {
  const auto found = partitions_.find(job);
  return found == partitions_.end() ? std::nullopt : std::optional(found->second);
}

// registry entries -----------------------------------------------------------------------------

policy_entry exclusive_entry() {
  return {"exclusive",
          "one job at a time, in arrival order, to completion (no sharing)",
          {},
          [](const policy_context&) { return std::make_unique<exclusive_policy>(); }};
}

policy_entry temporal_entry() {
  return {"temporal",
          "one iteration at a time across jobs, round-robin; every job stays resident",
          {},
          [](const policy_context&) { return std::make_unique<temporal_policy>(); }};
}

policy_entry spatial_entry() {
  return {"spatial",
          "every job runs freely on the shared pool (MPS without oversubscription)",
          {},
          [](const policy_context&) { return std::make_unique<spatial_policy>(); }};
}

policy_entry static_entry() {
  return {"static",
          "the budget split into equal fixed partitions, one per job (memory fraction / MIG)",
          {},
          [](const policy_context& context) {
            return std::make_unique<static_partition_policy>(context.budget_bytes,
                                                             context.job_count);
          }};
}

policy_entry fifo_entry() {
  return {"fifo",
          "Salus's FIFO baseline: the exclusive policy under Salus's name",
          {},
          [](const policy_context&) { return std::make_unique<exclusive_policy>("fifo"); }};
}

}  // namespace tandem::schedule
