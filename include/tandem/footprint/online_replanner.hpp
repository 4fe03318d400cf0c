#pragma once
// TENSILE's online planning (§4.3, §4.5, Algorithm 3) without a runtime: the jobs present on a
// device, each with its access sequence as estimated before it ran and as corrected since by the
// operation times measured while it runs (an exponentially weighted moving average), and one
// joint plan for all of them, made again when a job arrives or leaves, when the budget changes,
// or when the measured times have drifted past a threshold from those the plans were made for.
// A new plan applies at each job's next iteration boundary: the caller asks for plans there
// (replan_if_needed) and hands each job its own.
//
// The runtime (one per device) and the simulator both drive it. Not thread-safe: the caller
// serializes calls (the runtime's policy gate, the simulator's single thread).

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint {

/// How much more the operations' times must shift among themselves than in all to count as
/// drift (online_options::drift_threshold): one operation's jitter is not a change of plan.
inline constexpr double redistribution_factor = 3.0;

struct online_options {
  /// TENSILE's beta: a measured duration d moves an operation's estimate e to
  /// beta * e + (1 - beta) * d. In [0, 1); 0 takes the last measurement as it is.
  double ewma_beta = 0.8;
  /// Re-plan when the estimated durations of a job's operations have moved, in all, by more
  /// than this share of the iteration the plans were made for (|sum (e - e_planned)| /
  /// iteration), or have shifted between operations by more than redistribution_factor times
  /// it (sum |e - e_planned| / iteration): >= 0, 0 never re-plans on drift.
  double drift_threshold = 0.1;
  /// After each planning, the iterations every job measures (record_iteration) before drift is
  /// judged; their mean becomes the job's estimate and the reference it drifts from. A plan
  /// changes its job's operation times itself (its copies share the host's cores and memory
  /// bandwidth with the computation), and that change is no drift: judged against the times
  /// the plan was made from, it set off a new planning every few iterations (three VGG-16s,
  /// README, "Re-planning on drift").
  std::size_t settle_iterations = 3;
  std::size_t budget_bytes = 0;  ///< for all jobs together; 0: the planner's own choice
  cost_options costs;
};

/// Why plans are due.
enum class replan_reason : std::uint8_t { none, arrival, departure, drift, budget };
[[nodiscard]] std::string_view to_string(replan_reason r);

class online_replanner {
 public:
  using job_key = std::uint64_t;

  /// Plans with `planner`: jointly when it is a joint planner (joint_planner.hpp), else job by
  /// job for equal shares of the budget. Throws usage_error for options out of range.
  online_replanner(std::shared_ptr<const planner> planner, const online_options& options);

  /// A job arrives with its estimated sequence (TENSILE's initial plan comes from it, before
  /// any measurement). usage_error for a key present already or an invalid sequence.
  void add_job(job_key job, access_sequence estimated, double max_swap_ratio = 1.0);
  /// A job leaves; its plan goes with it. usage_error for an unknown key.
  void remove_job(job_key job);
  void set_budget(std::size_t bytes);

  /// A measured duration of operation `op` of the job's iteration. usage_error for an unknown
  /// job or operation, or a duration that is not a finite number of seconds >= 0.
  void record_duration(job_key job, std::size_t op, double duration_s);
  /// A whole iteration's measured durations, one per operation in order.
  void record_iteration(job_key job, std::span<const double> durations_s);

  /// What is due: none when the plans in hand are current.
  [[nodiscard]] replan_reason due() const;
  /// Plans every present job together from its current estimate when due() says so (and
  /// always the first time after an arrival): each job's new plan, to apply at its next
  /// iteration boundary. Empty when nothing is due.
  std::map<job_key, plan> replan_if_needed();
  /// Plans now whatever due() says.
  std::map<job_key, plan> replan();

  [[nodiscard]] std::vector<job_key> jobs() const;
  /// The job's current plan (empty before the first replan). usage_error for an unknown key.
  [[nodiscard]] const plan& plan_of(job_key job) const;
  /// The job's sequence with the estimated durations, the recorded idle time between
  /// operations kept.
  [[nodiscard]] access_sequence estimate_of(job_key job) const;
  /// Plans made so far.
  [[nodiscard]] std::size_t replans() const { return replans_; }

 private:
  struct job_state {
    access_sequence sequence;  ///< as estimated at arrival
    double max_swap_ratio = 1;
    std::vector<double> estimate_s;  ///< per operation, the EWMA
    std::vector<double> planned_s;   ///< what drift is judged from: measured under the plan
    std::size_t settle_left = 0;     ///< iterations to measure under the plan before judging
    std::vector<double> settle_sum;  ///< per operation, their durations summed
    plan current;
  };
  const job_state& find(job_key job) const;
  job_state& find(job_key job);
  [[nodiscard]] bool drifted(const job_state& j) const;

  std::shared_ptr<const planner> planner_;
  online_options options_;
  std::map<job_key, job_state> jobs_;
  replan_reason pending_ = replan_reason::none;
  std::size_t replans_ = 0;
};

/// An online_replanner for the planner `spec` names (make_planner), pricing with `costs` and
/// judging drift as the planner's joint options say (joint_planner::drift_threshold and
/// settle_iterations), else by online_options' defaults: the runtime's and the simulator's.
[[nodiscard]] std::unique_ptr<online_replanner> make_online_replanner(const std::string& spec,
                                                                      const cost_options& costs);

}  // namespace tandem::footprint
