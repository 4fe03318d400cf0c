#pragma once
// The budgets at which a job's iteration is planned when a policy chooses among plans
// (schedule::chooses_footprint; `[policy] planner`): a ladder from its persistent bytes (what no
// plan here moves) to its vanilla peak. One definition for the simulator's variants
// (sim::make_footprint_variants) and the runtime's (runtime::detail::planned_variants).

#include <cstddef>
#include <vector>

namespace tandem::footprint {

/// Where the plans' budgets lie, as shares of the way from the persistent bytes to the vanilla
/// peak: 0.8 plans for persistent + 80% of the rest.
inline constexpr double plan_ladder_levels[] = {0.8, 0.6, 0.45, 0.3, 0.2};

/// The ladder's budgets in bytes, highest first; empty when the peak is not above `persistent`.
[[nodiscard]] inline std::vector<std::size_t> plan_ladder(std::size_t persistent,
                                                          std::size_t vanilla_peak) {
  std::vector<std::size_t> budgets;
  if (vanilla_peak <= persistent) return budgets;
  for (const double level : plan_ladder_levels) {
    budgets.push_back(persistent + static_cast<std::size_t>(
                                       level * static_cast<double>(vanilla_peak - persistent)));
  }
  return budgets;
}

}  // namespace tandem::footprint
