#pragma once
// A footprint planner: from an iteration's access sequence and a budget, a plan. The baselines
// tandem is measured against (none, vdnn-all, vdnn-conv, superneurons, checkpoint, capuchin)
// and the papers' planners (TENSILE, HOME: later) all implement this, and register by name.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan.hpp"

namespace tandem::footprint {

struct planning_request {
  /// Bytes the job's iteration should fit in (other_bytes included); 0: the planner's own
  /// choice (vDNN offloads everything it offloads, checkpoint takes sqrt(n) segments).
  std::size_t budget_bytes = 0;
  cost_options costs;  ///< how the planner prices what it considers
};

class planner {
 public:
  virtual ~planner() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// One line for `tandem plan --help` and the README's table.
  [[nodiscard]] virtual std::string_view summary() const = 0;
  /// A plan valid for `sequence` (validate() holds). A budget the planner cannot reach gives its
  /// best plan; the caller compares the predicted peak with the budget.
  [[nodiscard]] virtual plan make_plan(const access_sequence& sequence,
                                       const planning_request& request) const = 0;
};

/// The registered planners' names, in the order `tandem plan` lists them.
[[nodiscard]] std::vector<std::string> planner_names();
/// The planner called `name`; usage_error listing the names (and the nearest one) otherwise.
[[nodiscard]] std::unique_ptr<planner> make_planner(std::string_view name);

}  // namespace tandem::footprint
