#include "tandem/footprint/joint_planner.hpp"

#include <algorithm>
#include <cstdint>

#include "tandem/common/error.hpp"

namespace tandem::footprint {

const joint_planner* joint_planning_of(const planner& p) {
  return dynamic_cast<const joint_planner*>(&p);
}

std::vector<plan> plan_jobs(const planner& p, std::span<const joint_job> jobs,
                            const joint_request& request) {
  if (const auto* joint = joint_planning_of(p)) return joint->make_joint_plan(jobs, request);
  std::vector<plan> plans;
  const auto share = jobs.empty() ? 0 : request.budget_bytes / jobs.size();
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    TANDEM_EXPECTS(jobs[j].sequence != nullptr, usage_error,
                   "plan_jobs: job " + std::to_string(j) + " has no access sequence");
    plans.push_back(p.make_plan(
        *jobs[j].sequence,
        {.budget_bytes = request.budget_bytes == 0 ? 0 : std::max<std::size_t>(share, 1),
         .costs = request.costs}));
  }
  return plans;
}

system_peak system_peak_of(std::span<const prediction> predictions) {
  struct change {
    double at_s = 0;
    std::size_t job = 0;
    std::size_t bytes = 0;
  };
  std::vector<change> changes;
  for (std::size_t j = 0; j < predictions.size(); ++j) {
    for (const auto& point : predictions[j].curve) changes.push_back({point.at_s, j, point.bytes});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const change& a, const change& b) { return a.at_s < b.at_s; });
  std::vector<std::size_t> held(predictions.size(), 0);
  std::int64_t total = 0;
  system_peak peak;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const auto& c = changes[i];
    total += static_cast<std::int64_t>(c.bytes) - static_cast<std::int64_t>(held[c.job]);
    held[c.job] = c.bytes;
    // What is held at the end of an instant: every change at it applied.
    if (i + 1 < changes.size() && changes[i + 1].at_s == c.at_s) continue;
    if (static_cast<std::size_t>(total) > peak.bytes)
      peak = {static_cast<std::size_t>(total), c.at_s};
  }
  return peak;
}

}  // namespace tandem::footprint
