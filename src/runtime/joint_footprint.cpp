#include "joint_footprint.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include "tandem/footprint/joint_planner.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::runtime::detail {

bool joint_footprint::plans_jointly(const std::string& spec) {
  const auto made = footprint::make_planner(spec);
  return footprint::joint_planning_of(*made) != nullptr;
}

footprint::plan joint_footprint::join(memory::job_id job, const std::string& planner,
                                      footprint::access_sequence sequence, std::size_t budget_bytes,
                                      std::uint64_t& version) {
  std::lock_guard lock(mutex_);
  auto& g = groups_[planner];
  if (!g.replanner) g.replanner = footprint::make_online_replanner(planner, costs_);
  g.replanner->add_job(job, std::move(sequence));
  g.budgets[job] = budget_bytes;
  replan(planner, g);
  const auto& mine = plans_.at(job);
  version = mine.version;
  return mine.plan;
}

void joint_footprint::replan(const std::string& planner, group& g) {
  // One budget for the group: the sum of the jobs' own, unless one leaves it to the planner.
  std::size_t budget = 0;
  const bool every_job_has_one = std::all_of(g.budgets.begin(), g.budgets.end(),
                                             [](const auto& entry) { return entry.second > 0; });
  if (every_job_has_one) {
    for (const auto& [unused, bytes] : g.budgets) budget += bytes;
  }
  g.replanner->set_budget(budget);
  for (auto& [job, plan] : g.replanner->replan()) {
    plans_[static_cast<memory::job_id>(job)] = {planner, std::move(plan), next_version_++};
  }
}

std::optional<footprint::plan> joint_footprint::newer_plan(memory::job_id job,
                                                           std::uint64_t& version) {
  std::lock_guard lock(mutex_);
  const auto found = plans_.find(job);
  if (found == plans_.end() || found->second.version <= version) return std::nullopt;
  version = found->second.version;
  return found->second.plan;
}

bool joint_footprint::measured(memory::job_id job, const std::vector<double>& durations_s) {
  if (durations_s.empty()) return false;
  std::lock_guard lock(mutex_);
  const auto found = plans_.find(job);
  if (found == plans_.end()) return false;
  const auto planner = found->second.planner;
  auto& g = groups_.at(planner);
  g.replanner->record_iteration(job, durations_s);
  if (g.replanner->due() != footprint::replan_reason::drift) return false;
  replan(planner, g);
  ++g.drift_replans;
  return true;
}

void joint_footprint::leave(memory::job_id job) noexcept {
  try {
    std::lock_guard lock(mutex_);
    const auto found = plans_.find(job);
    if (found == plans_.end()) return;
    const auto planner = found->second.planner;
    plans_.erase(found);
    auto& g = groups_.at(planner);
    g.replanner->remove_job(job);
    g.budgets.erase(job);
    if (!g.budgets.empty()) replan(planner, g);
  } catch (...) {
    // The others keep the plans they have: planning again is an optimisation, not a duty.
  }
}

std::size_t joint_footprint::replans(const std::string& planner) const {
  std::lock_guard lock(mutex_);
  const auto found = groups_.find(planner);
  return found == groups_.end() ? 0 : found->second.replanner->replans();
}

std::size_t joint_footprint::drift_replans(const std::string& planner) const {
  std::lock_guard lock(mutex_);
  const auto found = groups_.find(planner);
  return found == groups_.end() ? 0 : found->second.drift_replans;
}

}  // namespace tandem::runtime::detail
