#include "tandem/sim/footprint_variants.hpp"

#include <utility>

#include "tandem/common/units.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan_ladder.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/sim/planned_profile.hpp"

namespace tandem::sim {

std::vector<schedule::footprint_variant> footprint_variants::offer() const {
  std::vector<schedule::footprint_variant> out;
  out.reserve(profiles.size());
  for (std::size_t k = 0; k < profiles.size(); ++k) {
    out.push_back({labels[k], profiles[k]->held, profiles[k]->solo_iteration_s()});
  }
  return out;
}

footprint_variants make_footprint_variants(std::shared_ptr<const job_profile> plain,
                                           const footprint::access_sequence& sequence,
                                           std::string_view planner, double copy_bandwidth,
                                           std::size_t region_size) {
  check_planner(planner);
  footprint_variants out;
  const footprint::cost_options costs{.copy_bandwidth = copy_bandwidth};
  const auto vanilla = footprint::predict(sequence, footprint::plan{}, costs);
  const std::size_t floor = plain->persistent_bytes();
  const std::size_t peak = vanilla.peak_bytes;
  std::size_t least_held = plain->held.peak();
  out.profiles.push_back(std::move(plain));
  out.labels.emplace_back("none");
  const auto maker = footprint::make_planner(planner);
  for (const auto budget : footprint::plan_ladder(floor, peak)) {
    const auto made = maker->make_plan(sequence, {.budget_bytes = budget, .costs = costs});
    if (made.decisions.empty()) continue;
    const auto predicted = footprint::predict(sequence, made, costs);
    auto profile = profile_from_prediction(*out.profiles.front(), sequence, predicted,
                                           std::string(planner), region_size, true);
    // Worth offering only when it holds a region less than the variant before it.
    if (profile.held.peak() + region_size > least_held) continue;
    least_held = profile.held.peak();
    out.labels.push_back(std::string(planner) + " at " + format_bytes(budget));
    profile.plan = out.labels.back();
    out.profiles.push_back(std::make_shared<const job_profile>(std::move(profile)));
  }
  return out;
}

}  // namespace tandem::sim
