#pragma once
// A footprint planner: from an iteration's access sequence and a budget, a plan. The baselines
// tandem is measured against (none, vdnn-all, vdnn-conv, superneurons, checkpoint, capuchin),
// the papers' planners (home; TENSILE: later), the exact one (optimal) and tandem's own search
// (tandem) all implement this, and register by name.
//
// A planner is named by a spec, `NAME` or `NAME:KEY=VALUE,KEY=VALUE` (e.g.
// "home:iterations=50,particles=50", "optimal:time_limit=10"): every place that takes a planner
// name (`tandem plan --planner`, `tandem sim --planner`, `tandem maxbatch --planner`, a
// workload's `planner =`) takes a spec, and make_planner reads its options.

#include <cstddef>
#include <memory>
#include <stop_token>
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
  /// Once a stop is requested (Ctrl-C), a search ends at once with the best plan it has, as at
  /// its time limit; the one-pass planners take too little time to need it.
  std::stop_token stop;
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

/// The planner that the name `default` stands for, and that tandem uses where planning is asked
/// for without a planner's name (a `plan_budget` without `planner`, `tandem plan` for a job that
/// names none): tandem's own search, the one that measures best in simulation and at a given
/// budget (README, "The default planner").
inline constexpr std::string_view default_planner = "tandem";

/// The registered planners' names, in the order `tandem plan` lists them.
[[nodiscard]] std::vector<std::string> planner_names();
/// What a spec may name: the registered planners and `default`; messages list and suggest these.
[[nodiscard]] std::vector<std::string> planner_spellings();
/// The options planner `name` takes (KEY of NAME:KEY=VALUE), with their meaning; empty for
/// the planners without options.
[[nodiscard]] std::vector<std::string> planner_option_help(std::string_view name);
/// The planner a spec names (NAME or NAME:KEY=VALUE,...); usage_error listing the names (and
/// the nearest one) for an unknown name, naming the option and the planner's options for an
/// unknown or malformed option.
[[nodiscard]] std::unique_ptr<planner> make_planner(std::string_view spec);
/// The NAME of a spec (what precedes ':'), with `default` read as default_planner.
[[nodiscard]] std::string_view planner_name_of(std::string_view spec);

}  // namespace tandem::footprint
