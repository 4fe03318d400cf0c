#pragma once
// A footprint plan: which tensors of an iteration leave device memory, when, and how they come
// back. Data, not code: planners write plans, the cost model prices them, the executor runs
// them on a real job, and `tandem plan --json` saves them (versioned JSON).
//
// Times are tied to operations, as TENSILE ties its swap tasks (§4.2): a trigger is an
// operation of the access sequence plus a delay after that operation starts, so a plan survives
// the small timing changes between the profiled iteration and the next.

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"

namespace tandem::footprint {

enum class action : std::uint8_t {
  swap,       ///< copied to host memory over the copy engine, copied back before it is needed
  recompute,  ///< dropped, rebuilt by running its creating operation again before it is needed
};

[[nodiscard]] std::string_view to_string(action a);

/// `delay_s` seconds after operation `op` starts.
struct trigger {
  std::size_t op = 0;
  double delay_s = 0;
  friend bool operator==(const trigger&, const trigger&) = default;
};

/// One stretch of a tensor's life spent out of device memory. Accesses are numbered as the
/// tensor's: 0 is its creation (or, for a persistent tensor, the start of the iteration), i >= 1
/// its i-th read (access_sequence's tensor::read_by[i - 1]).
struct decision {
  std::size_t tensor = 0;
  action what = action::swap;
  std::size_t released_after = 0;  ///< it leaves once this access is done...
  /// ...and must be back before this one starts: the next access (released_after + 1), since
  /// an operation never reads a tensor that is out.
  std::size_t needed_at = 1;
  /// Swap only: when the copy out is issued (no earlier than the release access's end: the
  /// executor waits for that) and when the copy in is (the prefetch). The device memory is
  /// freed when the copy out completes and taken again when the copy in is issued.
  trigger swap_out;
  trigger swap_in;
  friend bool operator==(const decision&, const decision&) = default;
};

/// How a searching planner (home, tandem, optimal) came to its plan; the others leave it empty.
struct search_summary {
  double seconds = 0;           ///< wall-clock time of the search
  std::size_t evaluations = 0;  ///< plans priced by the cost model
  double predicted_s = 0;       ///< the cost model's iteration time of the plan returned
  std::size_t predicted_peak_bytes = 0;
  /// optimal only: its integer program's objective (its own model of the iteration time, in
  /// seconds), the best lower bound CBC proved, and whether it proved the objective optimal
  /// within its time limit. The relative gap is (objective - bound) / objective.
  std::optional<double> objective_s;
  std::optional<double> bound_s;
  bool proven_optimal = false;
  friend bool operator==(const search_summary&, const search_summary&) = default;
};

/// Every tensor not named by a decision is retained. A tensor may have several decisions whose
/// stretches do not overlap.
struct plan {
  std::string planner;  ///< who made it: "none", "vdnn-all", "capuchin", ...
  std::string model;
  std::int64_t batch_size = 0;
  std::size_t budget_bytes = 0;  ///< the budget it was made for; 0: the planner's own choice
  std::vector<decision> decisions;
  std::optional<search_summary> search;  ///< written as "search" when present (optional field)
  friend bool operator==(const plan&, const plan&) = default;
};

/// Throws config_error naming the decision for a plan that does not fit `sequence`: a tensor or
/// operation that does not exist, a stretch that ends before it starts, at an access that does
/// not exist or past a read, stretches of one tensor that overlap, a swap triggered by the
/// operation that needs the tensor back or a later one, a recompute of a persistent tensor, of
/// one whose creating operation is not recomputable, or of one whose creating operation reads a
/// tensor that is out at that time. "Out" there: released
/// for good by then, or swapped out and not due back for that operation; an input recomputed
/// itself is fine (rebuilt first, recursively).
void validate(const plan& p, const access_sequence& sequence);

inline constexpr int plan_schema_version = 1;

void write_plan_json(const plan& p, std::ostream& out);
/// Reads what write_plan_json writes. `source` names the input in messages; config_error names
/// the field for malformed input or another schema version.
[[nodiscard]] plan read_plan_json(std::istream& in, const std::string& source);

}  // namespace tandem::footprint
