#pragma once
// What a run measured: per job and for the whole system. `tandem run` prints it as a table and
// writes it as JSON (schema in docs/results-schema.md; bump results_schema_version when a field
// changes meaning or goes away).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/memory/alloc_kind.hpp"
#include "tandem/runtime/plan_traffic.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/schedule/reports_statistics.hpp"

namespace tandem::runtime {

inline constexpr int results_schema_version = 1;

struct iteration_record {
  double start_s = 0;  ///< when the policy let it start (seconds since the run began)
  double end_s = 0;
  double loss = 0;
  std::size_t peak_bytes = 0;  ///< the job's live bytes at their highest in the iteration
  /// When the job asked the policy to start it: start_s - requested_s is the time it waited for
  /// the policy before it began (for a job's first iteration, the wait before its setup too).
  double requested_s = 0;
  /// The footprint plan it ran under, as offered to the policy ("tensile at 12.00 MiB") or as
  /// the job's planner names it; empty: none.
  std::string plan;
  plan_traffic traffic;
  double memory_wait_s = 0;  ///< of start_s..end_s: waiting for regions other jobs held
  double group_wait_s = 0;   ///< of start_s..end_s: waiting at group boundaries (nodegroup)
};

/// An iteration cut short and run again (job_result::restarts): from its start to the cut.
struct restarted_attempt {
  double start_s = 0;
  double end_s = 0;
  friend bool operator==(const restarted_attempt&, const restarted_attempt&) = default;
};

/// One allocation (delta > 0) or free (delta < 0) of a job, relative to its iteration's start.
struct allocation_step {
  double at_s = 0;
  std::int64_t delta_bytes = 0;
  memory::alloc_kind kind = memory::alloc_kind::unknown;
  friend bool operator==(const allocation_step&, const allocation_step&) = default;
};

/// One top-level operation of an iteration on the job's thread (a forward op, an autograd node
/// of the backward pass, an optimizer op), relative to its iteration's start.
struct operation_record {
  std::string name;
  double start_s = 0;
  double duration_s = 0;
  friend bool operator==(const operation_record&, const operation_record&) = default;
};

/// A job's last complete iteration in detail, recorded when run_options::record_allocations is
/// set (tandem profile): its allocations and frees, the regions it held, and its operations.
struct iteration_detail {
  std::vector<allocation_step> allocations;
  schedule::usage_curve held;
  std::vector<operation_record> operations;  ///< in order of start
};

/// stopped: the run was asked to stop (Ctrl-C) before the job finished; what it measured until
/// then is kept.
enum class job_status { completed, failed, stopped };

/// A set of durations (request latencies, job-switch times) in seconds: how many, their mean,
/// nearest-rank percentiles and the largest. Every time is 0 when there are none.
struct latency_summary {
  std::size_t count = 0;
  double mean_s = 0;
  double p50_s = 0;
  double p95_s = 0;
  double p99_s = 0;
  double max_s = 0;
  friend bool operator==(const latency_summary&, const latency_summary&) = default;
};

/// The nearest-rank `p`-th percentile of `values` (in any order): the smallest value that at
/// least p% of the values are at or below, i.e. the ceil(p/100 * n)-th smallest (the smallest for
/// p = 0). Throws usage_error when `values` is empty or `p` is outside [0, 100].
[[nodiscard]] double percentile(std::vector<double> values, double p);
/// Summarizes `values` (in any order); an empty list gives the all-zero summary.
[[nodiscard]] latency_summary summarize_latencies(std::vector<double> values);

/// A training job run under a footprint plan (`planner =`, `tandem run --planner`): the plan's
/// predictions, and what its iterations measured against the job's own vanilla iteration.
struct footprint_result {
  std::string planner;
  std::size_t budget_bytes = 0;        ///< the plan was made for; 0: the planner's own choice
  std::size_t swapped_tensors = 0;     ///< the plan's: distinct tensors swapped
  std::size_t recomputed_tensors = 0;  ///< the plan's: distinct tensors recomputed
  // Predicted by the cost model from the recorded iteration.
  std::size_t predicted_vanilla_peak_bytes = 0;
  std::size_t predicted_peak_bytes = 0;
  double predicted_vanilla_iteration_s = 0;  ///< the recorded iteration, replayed
  double predicted_iteration_s = 0;          ///< under the plan
  double predicted_msr = 0;
  double predicted_eor = 0;
  /// How the predictions were brought to the job's plain speed once its reference iteration
  /// ran: "timed" (the operations' times as the plain settling iteration timed them, scaled to
  /// the reference's length), "scaled" (every recorded time scaled to the reference), or
  /// empty (not: the reference swapped passively, or its speed was no like-for-like measure).
  std::string calibration;
  /// The cost model's again, once a planned iteration has run: the plan priced (alone) at the
  /// operation times the executor measured in it, after their stalls and reruns, with the
  /// recorded idle time between them. The recording's distortions (its callbacks, the early
  /// iterations' slower allocations) are out of these; what error is left is the cost model's
  /// own. 0 until then, and for a plan that moves nothing (it is priced as the reference).
  double repriced_iteration_s = 0;
  std::size_t repriced_peak_bytes = 0;
  // Measured: the vanilla (reference) iteration, and the planned ones (peak: their highest;
  // time: their median).
  std::size_t vanilla_peak_bytes = 0;
  double vanilla_iteration_s = 0;
  /// The iterations before the plan moved tensors out in passive mode (the budget is below the
  /// vanilla peak): bytes out over the three. When the reference moved any, it was no vanilla
  /// iteration (its peak was the budget's, its time had the copies in it), so vanilla_peak_bytes
  /// and vanilla_iteration_s are the cost model's predictions from the recorded iteration and
  /// vanilla_predicted is set.
  std::size_t passive_swapped_out_bytes = 0;
  bool vanilla_predicted = false;
  /// Passive swapping as the fallback beside the plan, in the planned iterations (once memory
  /// proved short before the plan): bytes out. 0 when the plan fitted the budget by itself.
  std::size_t fallback_swapped_out_bytes = 0;
  /// Of those, the bytes moved beside the last plan that ran an iteration: 0 when it held by
  /// itself, as a refitted plan may where the first did not.
  std::size_t last_plan_fallback_bytes = 0;
  /// Plans made again for less after a plan needed the fallback beside it (a job planned
  /// alone; at most 3): each for its predicted peak less what the fallback moved, from the
  /// next iteration. Counted in replans too.
  std::size_t refits = 0;
  std::size_t planned_iterations = 0;
  std::size_t planned_peak_bytes = 0;
  double planned_iteration_s = 0;
  double msr = 0;  ///< 1 - planned peak / vanilla peak
  double eor = 0;  ///< planned time / vanilla time - 1
  double cbr = 0;  ///< msr / eor (infinite when nothing was lost)
  // What the executor did, over the planned iterations.
  std::size_t swapped_out_bytes = 0;
  std::size_t swapped_in_bytes = 0;
  std::size_t recomputations = 0;
  double stall_s = 0;
  double recompute_s = 0;
  std::size_t missed_decisions = 0;
  std::size_t diverged_iterations = 0;
  /// Bytes the executor swapped out of turn to make room for an allocation that would
  /// otherwise have failed (every running iteration waiting for another, none able to restart):
  /// the plan's timing did not hold beside the others. Counted in swapped_out_bytes too.
  std::size_t evicted_bytes = 0;
  /// Bytes of tensors needed back where no memory would come, even out of turn: their readers
  /// read them in host memory instead of the job failing (plan_executor::make_present).
  std::size_t host_read_bytes = 0;
  /// Plans taken after the first: a job planned jointly with the others of its device gets a
  /// new plan when one of them arrives or leaves, or when the operation times it measures
  /// under its plan drift from those the plan was made for (at its next iteration boundary);
  /// a job planned alone, its refits.
  std::size_t replans = 0;
  /// Of those, the ones its own measured times set off (TENSILE §4.5).
  std::size_t drift_replans = 0;
};

struct job_result {
  std::string name;
  job_kind kind = job_kind::training;
  std::string model;
  std::int64_t batch_size = 0;
  std::int64_t threads = 1;
  job_status status = job_status::completed;
  std::string error;           ///< why it failed or stopped; empty when completed
  bool out_of_memory = false;  ///< failed because an allocation could not be met

  double arrival_s = 0;
  double first_start_s = 0;  ///< its first iteration's start (after setup: model, optimizer)
  double end_s = 0;          ///< completion or failure
  double setup_s = 0;        ///< building the model and optimizer
  double wait_s = 0;         ///< waiting for the policy
  std::int64_t iterations = 0;
  /// Iterations cut short and run again: every running iteration waited for another, and this
  /// one let go (schedule/policy_driver.hpp, "Memory waits"). Not counted in `iterations`.
  std::int64_t restarts = 0;
  std::vector<restarted_attempt> restarted_attempts;  ///< when each of them ran
  double iterations_per_s = 0;                        ///< iterations / (end - first start)
  double samples_per_s = 0;                           ///< iterations * batch / (end - first start)

  std::size_t peak_live_bytes = 0;
  std::size_t peak_reserved_bytes = 0;
  std::size_t persistent_bytes = 0;  ///< parameters, buffers and optimizer state, at the end
  std::size_t allocations = 0;       ///< requests the pool served for the job (not in the JSON)

  std::optional<double> first_loss;  ///< mean of the first iterations' losses
  std::optional<double> last_loss;   ///< mean of the last iterations' losses
  std::vector<iteration_record> iteration_log;
  /// The start of the iteration (or request) under way when the job failed or was stopped; none
  /// when it completed, or failed outside an iteration (its setup, a wait for the policy).
  std::optional<double> unfinished_start_s;
  /// What the policy reports of its decisions for this job (scrooge: iterations delayed,
  /// TimeShift, fallbacks...); empty for policies with nothing to report.
  std::vector<schedule::policy_statistic> policy_stats;
  std::optional<iteration_detail> last_iteration;  ///< when recording allocations
  /// A training job's last iteration as a tensor access sequence (TENSILE's), recorded with the
  /// allocations when the job's iterations are counted (not a duration); not in the JSON (tandem
  /// profile writes it).
  std::optional<footprint::access_sequence> access_sequence;
  std::optional<footprint_result> footprint;  ///< when it ran under a footprint plan

  /// Inference jobs: each served request's latency, from its arrival to the end of its forward
  /// pass, in order of arrival (not in the JSON), and their summary (count: requests served).
  /// Empty for training jobs.
  std::vector<double> latencies_s;
  std::optional<latency_summary> latency;
};

/// A budget change of the workload's schedule, when it took effect.
struct applied_budget_change {
  double at_s = 0;
  std::size_t bytes = 0;
};

struct run_result {
  std::string workload;  ///< the file it came from
  std::string policy;
  std::string device;  ///< the backend's description
  std::size_t capacity_bytes = 0;
  std::size_t budget_bytes = 0;  ///< at the start
  std::vector<applied_budget_change> budget_changes;
  double makespan_s = 0;  ///< from the start to the last job's end
  double aggregate_samples_per_s = 0;
  std::size_t peak_live_bytes = 0;      ///< all jobs together
  std::size_t peak_reserved_bytes = 0;  ///< all jobs together; never above the budget
  std::vector<job_result> jobs;
  std::vector<schedule::policy_statistic> policy_stats;  ///< over all jobs
  /// Job switches the policy gate measured (`tandem run`): each the time from another job's
  /// iteration end or departure to the iteration start it let happen (policy_gate.hpp). None in
  /// simulated runs.
  latency_summary switches;
  /// What the pool reported while the jobs ran: a refused free (a pointer freed twice, or by the
  /// wrong job), memory still held after every job left. None in a healthy run.
  std::vector<std::string> warnings;
  /// The run was asked to stop (run_options::stop) before every job finished.
  bool stopped = false;

  [[nodiscard]] std::size_t failed_jobs() const;
  [[nodiscard]] std::size_t stopped_jobs() const;
};

/// Salus's Table 2 metrics besides the makespan, over the completed training jobs (inference
/// and failed jobs are left out). Computed from the jobs, so real and simulated runs get the
/// same definitions.
struct completion_metrics {
  std::size_t jobs = 0;  ///< completed training jobs; the times are 0 when there are none
  double mean_queuing_s =
      0;                  ///< arrival to the policy's first start: first_start - setup - arrival
  double mean_jct_s = 0;  ///< job completion time: end - arrival
  double p95_jct_s = 0;   ///< nearest-rank 95th percentile of the completion times
};
[[nodiscard]] completion_metrics completion_metrics_of(const run_result& run);

/// A job's counts and rates from its iteration log: iterations, and iterations and samples per
/// second from its first start to its end. One definition for real and simulated runs.
void summarize_rates(job_result& job);
/// The run's makespan and aggregate samples per second from its jobs (after summarize_rates).
void summarize_run(run_result& run);

[[nodiscard]] const char* to_string(job_status status);
[[nodiscard]] const char* to_string(job_kind kind);

/// The results as JSON (see docs/results-schema.md).
void write_json(const run_result& result, std::ostream& out);
/// The per-job and system tables `tandem run` prints.
void print_table(const run_result& result, std::ostream& out);

}  // namespace tandem::runtime
