#pragma once
// The baseline policies every comparison runs beside (MISSION: "Baselines ... through the same
// interface"):
//   exclusive  one job at a time, in arrival order, to completion (no sharing)
//   temporal   one iteration at a time across jobs, round-robin; all jobs stay resident
//              (the papers' "Temporal")
//   spatial    every job runs freely on the shared pool (MPS without oversubscription)
//   static     the budget split into equal fixed partitions, one per job (memory fraction /
//              MIG analogue); a job that outgrows its partition fails with an OOM

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "tandem/schedule/fails_on_oom.hpp"
#include "tandem/schedule/memory_partitioning.hpp"
#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/policy_entry.hpp"

namespace tandem::schedule {

class exclusive_policy final : public policy {
 public:
  /// `name`: what results call it ("exclusive", or Salus's "fifo", the same policy).
  explicit exclusive_policy(std::string_view name = "exclusive") : name_(name) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  void on_arrival(const job_info& job, double now_s) override;
  void on_departure(job_id job, double now_s) override;
  [[nodiscard]] decision may_start(job_id job, double now_s) override;

 private:
  std::string_view name_;     // a literal: outlives the policy
  std::deque<job_id> queue_;  // arrival order; the front job owns the device
};

class temporal_policy final : public policy {
 public:
  [[nodiscard]] std::string_view name() const override { return "temporal"; }
  void on_arrival(const job_info& job, double now_s) override;
  void on_departure(job_id job, double now_s) override;
  [[nodiscard]] decision may_start(job_id job, double now_s) override;
  void on_iteration_start(job_id job, double now_s) override;
  void on_iteration_end(job_id job, const iteration_report& report, double now_s) override;

 private:
  std::set<job_id> jobs_;          // present jobs, in id order: the round-robin order
  std::optional<job_id> running_;  // the job granted the device, until its iteration ends
  std::optional<job_id> last_;     // the job that ran last
  std::set<job_id> asking_;        // jobs waiting to start an iteration
};

class spatial_policy final : public policy, public fails_on_oom {
 public:
  [[nodiscard]] std::string_view name() const override { return "spatial"; }
  [[nodiscard]] decision may_start(job_id, double) override { return decision::start(); }
};

class static_partition_policy final : public policy,
                                      public memory_partitioning,
                                      public fails_on_oom {
 public:
  /// `budget_bytes` is split equally among `expected_jobs` (at least 1) fixed partitions.
  static_partition_policy(std::size_t budget_bytes, std::size_t expected_jobs);
  [[nodiscard]] std::string_view name() const override { return "static"; }
  void on_arrival(const job_info& job, double now_s) override;
  void on_departure(job_id job, double now_s) override;
  void on_budget_change(std::size_t budget_bytes, double now_s) override;
  [[nodiscard]] decision may_start(job_id, double) override { return decision::start(); }
  [[nodiscard]] std::optional<std::size_t> memory_limit(job_id job) const override;

 private:
  std::size_t budget_;
  std::size_t expected_jobs_;
  std::map<job_id, std::size_t> partitions_;
};

// The baselines in the registry (registry.hpp); none takes options.
[[nodiscard]] policy_entry exclusive_entry();
[[nodiscard]] policy_entry temporal_entry();
[[nodiscard]] policy_entry spatial_entry();
[[nodiscard]] policy_entry static_entry();
/// Salus's FIFO is the exclusive baseline: jobs in arrival order, one at a time (Salus §5.1).
[[nodiscard]] policy_entry fifo_entry();

}  // namespace tandem::schedule
