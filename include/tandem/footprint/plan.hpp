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
///
/// Note [Stretches across iterations]: a persistent tensor (parameter, optimizer state) may be
/// swapped across the iteration boundary, as TENSILE swaps optimizer-updated tensors (§4): with
/// `wraps`, it leaves after its last access of the iteration (released_after = its number of
/// reads: the optimizer's step) and must be back before access `needed_at` = 1 (its first read)
/// of the *next* iteration. swap_out names an operation of the releasing iteration (the copy
/// out is issued at the later of the release access's end and the trigger: it may run past the
/// iteration's end); swap_in names an operation of the next iteration before the one that needs
/// it. In the steady state the tensor is thus out from the iteration's start until its copy in is
/// issued, and again from its copy out's completion to the end. Before a run's first planned
/// iteration, the executor copies it out once, so that no iteration holds it throughout.
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
  /// The stretch wraps the iteration boundary (Note [Stretches across iterations]): released
  /// after the last access, needed at access `needed_at` (1) of the next iteration. Swap only.
  bool wraps = false;
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
/// tensor that is out at that time; a stretch across iterations (`wraps`) of anything but a
/// persistent tensor's swap from its last access to its first read. "Out" there: released
/// for good by then, or swapped out and not due back for that operation; an input recomputed
/// itself is fine (rebuilt first, recursively).
void validate(const plan& p, const access_sequence& sequence);

/// 2: decisions carry `wraps`. Schema 1 files (no `wraps`: no stretch wraps) are still read.
inline constexpr int plan_schema_version = 2;

void write_plan_json(const plan& p, std::ostream& out);
/// Reads what write_plan_json writes, and schema 1. `source` names the input in messages;
/// config_error names the field for malformed input or another schema version.
[[nodiscard]] plan read_plan_json(std::istream& in, const std::string& source);

}  // namespace tandem::footprint
