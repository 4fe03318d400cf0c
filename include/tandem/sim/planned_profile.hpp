#pragma once
// Planned jobs in the simulator: a job whose iteration follows a footprint plan (tensors swapped
// to host memory or dropped and recomputed) replays, instead of its generated profile, the one
// cost model's prediction of its access sequence under that plan: the predicted memory curve as
// its allocations (so that the pool's replay gives the regions it holds) and the predicted
// iteration length as its operations' time. docs/simulator.md, "Planned jobs", says how.
//
// The plan is made by a footprint planner (footprint::make_planner) for a budget, and priced at
// the simulated GPU's host link (gpu_spec::pcie_bandwidth): the same planners and the same cost
// model as `tandem plan`.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/sim/job_profile.hpp"

namespace tandem::sim {

/// What a plan is made for: a share of the job's vanilla peak (the most its iteration holds with
/// nothing swapped or recomputed, as the cost model counts it) or a size. The meaning of a
/// workload's `plan_budget` and of runtime::footprint_budget.
struct plan_budget {
  double percent = 0;     ///< of the vanilla peak, above 0 and at most 100; 0 when `bytes` is
  std::size_t bytes = 0;  ///< above 0 when the budget is a size
  friend bool operator==(const plan_budget&, const plan_budget&) = default;

  /// The budget in bytes for a job whose vanilla peak is `vanilla_peak_bytes` (at least 1).
  [[nodiscard]] std::size_t bytes_for(std::size_t vanilla_peak_bytes) const;
  /// "75% of the vanilla peak", "6.00 GiB".
  [[nodiscard]] std::string describe() const;
};

/// "75%", "62.5%" (above 0, at most 100) or a size ("6GiB", "512MiB", "4096"; above 0). Throws
/// config_error naming the text and the forms it takes.
[[nodiscard]] plan_budget parse_plan_budget(std::string_view text);

/// How the simulated jobs are planned: every training job of the workload by `planner`.
struct job_planning {
  std::string planner;  ///< a name of footprint::planner_names()
  /// The plan's budget; none: the job's share of the device, the budget divided among the
  /// workload's jobs, with the plan made so that the regions the job holds fit it.
  std::optional<plan_budget> budget;
};

/// Throws config_error naming `planner` and listing the known ones when it is not a planner.
void check_planner(std::string_view planner);

/// A job's planned iteration: the plan, what the cost model predicts for it, and the profile the
/// simulator replays.
struct planned_iteration {
  footprint::plan plan;
  footprint::prediction vanilla;    ///< the sequence with nothing planned
  footprint::prediction predicted;  ///< under the plan
  job_profile profile;
};

/// The profile that replays `predicted` (the cost model's prediction of `sequence` under a plan)
/// in place of `vanilla` (the job's profile, telling the same iteration as `sequence`):
/// - operations: vanilla's, each stretched by predicted.iteration_s / sequence.iteration_s(), so
///   that they add up to the predicted iteration; their fill scaled by the share of that time the
///   device computes (the sequence's operations and the reruns; stall time leaves it idle);
/// - memory: the predicted curve's least value held as persistent, the rest as allocations and
///   frees at the curve's times (scaled as the operations), so that the live bytes follow the
///   curve exactly and the peak is predicted.peak_bytes;
/// - regions held: from the pool's own logic (replay_regions with `region_size`).
/// An empty plan's prediction gives vanilla's iteration length and, within the 512-byte rounding
/// of vanilla's allocations, its peak (its region curve may differ: the allocations differ).
/// `as_variant` (footprint_variants.hpp): hold vanilla's persistent tensors instead of the curve's
/// least value (the curve is taken as at least their sum), so that the profile holds the same
/// regions between iterations as vanilla and a job may switch between the two at any iteration
/// boundary; and keep each operation's host part as it is (its device part stretched), so that
/// a plan that costs no time co-locates exactly as the plain iteration does.
[[nodiscard]] job_profile profile_from_prediction(const job_profile& vanilla,
                                                  const footprint::access_sequence& sequence,
                                                  const footprint::prediction& predicted,
                                                  const std::string& planner,
                                                  std::size_t region_size, bool as_variant = false);

/// Plans `sequence` with `planner` for `budget_bytes` (0: the planner's own choice), priced at
/// `copy_bandwidth`, predicts the plan with the cost model and makes the profile. A plan that
/// moves nothing leaves `vanilla` as it is. Throws config_error for an unknown planner.
[[nodiscard]] planned_iteration plan_iteration(const job_profile& vanilla,
                                               const footprint::access_sequence& sequence,
                                               std::string_view planner, std::size_t budget_bytes,
                                               double copy_bandwidth, std::size_t region_size);

/// Plans so that the regions the job holds fit `share_bytes` (a job's share of the device): the
/// plan is made for the share, and made again for less by what its regions held came above it
/// (region rounding and fragmentation), a few times at most. The last plan is returned whether
/// it fits or not: a job whose regions still exceed its share runs out of memory in the
/// simulation, as it would on the device.
[[nodiscard]] planned_iteration plan_for_share(const job_profile& vanilla,
                                               const footprint::access_sequence& sequence,
                                               std::string_view planner, std::size_t share_bytes,
                                               double copy_bandwidth, std::size_t region_size);

}  // namespace tandem::sim
