#pragma once
// An optional capability of a footprint planner: planning several jobs of one device together,
// against one budget for all of them, with every job's copies on the one channel they share
// (cost_model.hpp's predict_together prices it). TENSILE (§3.1, §4) plans this way; the other
// planners plan one job at a time, and plan_jobs() divides the budget among the jobs for them.
//
// Found the way policy capabilities are (schedule/policy_capabilities.hpp): once, by
// joint_planning_of, and kept by the caller.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint {

/// One job of a joint plan. Its iteration starts with the others' (time 0 of every sequence is
/// one instant), as TENSILE's Table 2 starts its jobs together.
struct joint_job {
  const access_sequence* sequence = nullptr;
  /// TENSILE's max swapping ratio (Algorithm 1, MSR): the most of the job's tensors the plan
  /// may swap, as a share of them, in (0, 1]. A lower one gives the job priority: fewer of its
  /// copies contend for the channel.
  double max_swap_ratio = 1.0;
};

struct joint_request {
  /// Bytes every job's iteration together should fit in (each job's other_bytes included); 0:
  /// the planner's own choice (TENSILE: the lowest peak reachable without making any job wait).
  std::size_t budget_bytes = 0;
  cost_options costs;  ///< how the planner prices what it considers
};

class joint_planner {
 public:
  virtual ~joint_planner() = default;
  /// One plan per job, in `jobs`' order, each valid for its sequence (validate() holds). A
  /// budget the planner cannot reach gives its best plans; the caller compares the system-wide
  /// peak of predict_together with the budget. Each plan's budget_bytes is the system budget.
  /// Throws usage_error for a job without a sequence or a max_swap_ratio outside (0, 1].
  [[nodiscard]] virtual std::vector<plan> make_joint_plan(std::span<const joint_job> jobs,
                                                          const joint_request& request) const = 0;
  /// How far measured operation times may drift before the jobs are planned again
  /// (online_options::drift_threshold); 0: never on drift.
  [[nodiscard]] virtual double drift_threshold() const = 0;
  /// Iterations each job measures under a new plan before drift is judged from them
  /// (online_options::settle_iterations).
  [[nodiscard]] virtual std::size_t settle_iterations() const = 0;
};

/// `p` as a joint planner, or nullptr when it plans one job at a time. The pointer lives as
/// long as `p`.
[[nodiscard]] const joint_planner* joint_planning_of(const planner& p);

/// Plans `jobs` for one system budget with any planner: jointly when it can, else job by job,
/// each for an equal share of the budget (0 stays 0: each planner's own choice).
[[nodiscard]] std::vector<plan> plan_jobs(const planner& p, std::span<const joint_job> jobs,
                                          const joint_request& request);

/// The most every job's iteration holds at once when they start together: the peak of the sum
/// of their predicted curves, and when it is reached.
struct system_peak {
  std::size_t bytes = 0;
  double at_s = 0;
};
[[nodiscard]] system_peak system_peak_of(std::span<const prediction> predictions);

/// How `tensile` plans (make_tensile_planner); the registry's `tensile` uses the defaults.
struct tensile_options {
  /// max_swap_ratio for a job planned alone (make_plan), in (0, 1]; joint jobs carry their own.
  double max_swap_ratio = 1.0;
  /// Recompute (TENSILE §4.4) once nothing more can be swapped and the peak is still above the
  /// budget.
  bool recompute = true;
  /// Peak analyses (Algorithm 3's rounds) at most, >= 1: a bound on planning time.
  std::size_t max_rounds = 512;
  /// Swap optimizer-updated tensors across the iteration boundary (Note [Stretches across
  /// iterations]); off, they are swapped within an iteration only, as any tensor.
  bool across = true;
  /// Online (§4.5): how far the operation times jobs measure under their plans may drift
  /// before every job is planned again (online_options::drift_threshold); 0: never on drift.
  double drift = 0.1;
  /// Iterations measured under each new plan before drift is judged (online_options).
  std::size_t settle = 3;
};

/// Throws usage_error naming the option for options outside their ranges.
[[nodiscard]] std::unique_ptr<planner> make_tensile_planner(const tensile_options& options = {});

}  // namespace tandem::footprint
