#include "tandem/footprint/online_replanner.hpp"

#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "tandem/common/error.hpp"
#include "tandem/footprint/joint_planner.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint {

std::string_view to_string(replan_reason r) {
  switch (r) {
    case replan_reason::none:
      return "none";
    case replan_reason::arrival:
      return "arrival";
    case replan_reason::departure:
      return "departure";
    case replan_reason::drift:
      return "drift";
    case replan_reason::budget:
      return "budget";
  }
  return "?";
}

online_replanner::online_replanner(std::shared_ptr<const planner> planner,
                                   const online_options& options)
    : planner_(std::move(planner)), options_(options) {
  TANDEM_EXPECTS(planner_ != nullptr, usage_error, "online_replanner needs a planner");
  TANDEM_EXPECTS(options.ewma_beta >= 0 && options.ewma_beta < 1, usage_error,
                 "online_replanner: ewma_beta is the weight of the estimate so far, in [0, 1), "
                 "not " +
                     std::to_string(options.ewma_beta));
  TANDEM_EXPECTS(options.drift_threshold >= 0 && std::isfinite(options.drift_threshold),
                 usage_error,
                 "online_replanner: drift_threshold is a share of the iteration >= 0, not " +
                     std::to_string(options.drift_threshold));
}

void online_replanner::add_job(job_key job, access_sequence estimated, double max_swap_ratio) {
  TANDEM_EXPECTS(!jobs_.contains(job), usage_error,
                 "online_replanner: job " + std::to_string(job) + " is present already");
  try {
    validate(estimated);
  } catch (const config_error& e) {
    TANDEM_FAIL(usage_error, std::string("online_replanner: job ") + std::to_string(job) +
                                 "'s estimated sequence: " + e.what());
  }
  job_state state;
  for (const auto& op : estimated.operations) state.estimate_s.push_back(op.duration_s);
  state.planned_s = state.estimate_s;
  state.sequence = std::move(estimated);
  state.max_swap_ratio = max_swap_ratio;
  jobs_.emplace(job, std::move(state));
  pending_ = replan_reason::arrival;
}

void online_replanner::remove_job(job_key job) {
  static_cast<void>(find(job));
  jobs_.erase(job);
  if (pending_ == replan_reason::none) pending_ = replan_reason::departure;
}

void online_replanner::set_budget(std::size_t bytes) {
  if (bytes == options_.budget_bytes) return;
  options_.budget_bytes = bytes;
  if (pending_ == replan_reason::none) pending_ = replan_reason::budget;
}

void online_replanner::record_duration(job_key job, std::size_t op, double duration_s) {
  auto& j = find(job);
  TANDEM_EXPECTS(op < j.estimate_s.size(), usage_error,
                 "online_replanner: job " + std::to_string(job) + " has " +
                     std::to_string(j.estimate_s.size()) + " operations, not an operation " +
                     std::to_string(op));
  TANDEM_EXPECTS(std::isfinite(duration_s) && duration_s >= 0, usage_error,
                 "online_replanner: a measured duration is a finite number of seconds >= 0");
  auto& e = j.estimate_s[op];
  e = options_.ewma_beta * e + (1 - options_.ewma_beta) * duration_s;
}

void online_replanner::record_iteration(job_key job, std::span<const double> durations_s) {
  const auto& j = find(job);
  TANDEM_EXPECTS(durations_s.size() == j.estimate_s.size(), usage_error,
                 "online_replanner: an iteration of job " + std::to_string(job) + " has " +
                     std::to_string(j.estimate_s.size()) + " operations, not " +
                     std::to_string(durations_s.size()));
  for (std::size_t op = 0; op < durations_s.size(); ++op) record_duration(job, op, durations_s[op]);
  auto& state = find(job);
  if (state.settle_left == 0) return;
  for (std::size_t op = 0; op < durations_s.size(); ++op) state.settle_sum[op] += durations_s[op];
  if (--state.settle_left > 0) return;
  // Measured under its plan: the estimate and the reference drift is judged from.
  const auto n = static_cast<double>(options_.settle_iterations);
  for (std::size_t op = 0; op < durations_s.size(); ++op) {
    state.estimate_s[op] = state.planned_s[op] = state.settle_sum[op] / n;
  }
}

bool online_replanner::drifted(const job_state& j) const {
  // Measured on a busy host, every operation's time jitters: the sum of the absolute changes
  // wanders past a 10% threshold within a few iterations with nothing changed (ResNet-20 on 2
  // cores: 0.11-0.14 after 4-5 iterations, their net change under 0.09). So the net change of
  // the iteration's operation time decides, and a shift of time between operations with no net
  // change only when it is redistribution_factor times larger.
  double net = 0;
  double moved = 0;
  double iteration = 0;
  for (std::size_t op = 0; op < j.estimate_s.size(); ++op) {
    net += j.estimate_s[op] - j.planned_s[op];
    moved += std::abs(j.estimate_s[op] - j.planned_s[op]);
    iteration += j.planned_s[op];
  }
  if (j.settle_left > 0 || iteration <= 0 || options_.drift_threshold == 0) return false;
  return std::abs(net) / iteration > options_.drift_threshold ||
         moved / iteration > redistribution_factor * options_.drift_threshold;
}

replan_reason online_replanner::due() const {
  if (pending_ != replan_reason::none) return pending_;
  for (const auto& [key, j] : jobs_) {
    if (drifted(j)) return replan_reason::drift;
  }
  return replan_reason::none;
}

std::map<online_replanner::job_key, plan> online_replanner::replan_if_needed() {
  if (due() == replan_reason::none) return {};
  return replan();
}

std::map<online_replanner::job_key, plan> online_replanner::replan() {
  std::vector<access_sequence> estimates;
  std::vector<job_key> keys;
  for (const auto& [key, j] : jobs_) {
    keys.push_back(key);
    estimates.push_back(estimate_of(key));
  }
  std::vector<joint_job> joint;
  for (std::size_t i = 0; i < keys.size(); ++i)
    joint.push_back({&estimates[i], jobs_.at(keys[i]).max_swap_ratio});
  auto plans =
      plan_jobs(*planner_, joint, {.budget_bytes = options_.budget_bytes, .costs = options_.costs});
  std::map<job_key, plan> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto& j = jobs_.at(keys[i]);
    j.current = plans[i];
    j.planned_s = j.estimate_s;
    j.settle_left = options_.settle_iterations;
    j.settle_sum.assign(j.estimate_s.size(), 0.0);
    out.emplace(keys[i], std::move(plans[i]));
  }
  pending_ = replan_reason::none;
  ++replans_;
  return out;
}

std::vector<online_replanner::job_key> online_replanner::jobs() const {
  std::vector<job_key> keys;
  for (const auto& [key, j] : jobs_) keys.push_back(key);
  return keys;
}

const plan& online_replanner::plan_of(job_key job) const {
  return find(job).current;
}

access_sequence online_replanner::estimate_of(job_key job) const {
  const auto& j = find(job);
  return j.sequence.with_durations(j.estimate_s);
}

const online_replanner::job_state& online_replanner::find(job_key job) const {
  const auto found = jobs_.find(job);
  TANDEM_EXPECTS(found != jobs_.end(), usage_error,
                 "online_replanner: no job " + std::to_string(job) + " is present");
  return found->second;
}

online_replanner::job_state& online_replanner::find(job_key job) {
  return const_cast<job_state&>(std::as_const(*this).find(job));
}

std::unique_ptr<online_replanner> make_online_replanner(const std::string& spec,
                                                        const cost_options& costs) {
  std::shared_ptr<const planner> made = make_planner(spec);
  online_options options;
  options.costs = costs;
  if (const auto* joint = joint_planning_of(*made)) {
    options.drift_threshold = joint->drift_threshold();
    options.settle_iterations = joint->settle_iterations();
  }
  return std::make_unique<online_replanner>(std::move(made), options);
}

}  // namespace tandem::footprint
