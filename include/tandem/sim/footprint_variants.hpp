#pragma once
// A simulated job's iteration plain and under footprint plans at falling budgets: the variants a
// policy that chooses footprints (schedule::chooses_footprint; `[policy] planner = ...`) picks
// from at each start. Each plan is made by the footprint planner for its budget and priced by the
// one cost model at the GPU's host link (plan_iteration); its profile keeps the plain profile's
// persistent tensors, so that every variant holds the same regions between iterations and the
// job may change variant at any iteration boundary.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/schedule/chooses_footprint.hpp"
#include "tandem/sim/job_profile.hpp"

namespace tandem::sim {

struct footprint_variants {
  /// 0: the plain profile; then each plan's, in order of falling peak of regions held.
  std::vector<std::shared_ptr<const job_profile>> profiles;
  std::vector<std::string> labels;  ///< "none", "tensile at 3.20 GiB"

  /// The variants as a policy is offered them: each profile's regions held and solo length.
  [[nodiscard]] std::vector<schedule::footprint_variant> offer() const;
};

/// The plain profile and a plan at each budget of footprint::plan_ladder by `planner` (a planner
/// spec), priced
/// at `copy_bandwidth`; a plan is kept only when it holds at least one region less at its peak
/// than the variant before it. Throws config_error for an unknown planner.
[[nodiscard]] footprint_variants make_footprint_variants(std::shared_ptr<const job_profile> plain,
                                                         const footprint::access_sequence& sequence,
                                                         std::string_view planner,
                                                         double copy_bandwidth,
                                                         std::size_t region_size);

}  // namespace tandem::sim
