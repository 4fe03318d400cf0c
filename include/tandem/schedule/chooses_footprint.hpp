#pragma once
// An optional capability of a policy: besides *when* a job's iteration starts, it chooses *how*
// it runs, plain or under a footprint plan that swaps and recomputes tensors to lower its peak
// at some extra time (issue 19: co-scheduling and footprint reduction decided together). The
// executor (the runtime's planned jobs, the simulator's planned profiles) makes the plans with a
// footprint planner and offers them as variants; the policy picks one with every start verdict,
// weighing a delay (a TimeShift, waiting for an iteration end) against a plan's extra time by
// the cost model's predictions. Plans change only at iteration boundaries; the budget stays the
// policy's to keep (a variant's predicted curve is what the policy plans and claims with).
//
// Calls are serialized by the driver like the policy's own.

#include <cstddef>
#include <string>
#include <vector>

#include "tandem/memory/trace.hpp"
#include "tandem/schedule/usage_curve.hpp"

namespace tandem::schedule {

/// One way to run a job's iteration, as predicted alone on the device.
struct footprint_variant {
  std::string label;       ///< "none", "tensile at 70%": for statistics and reports
  usage_curve held;        ///< the regions held over the iteration, relative to its start
  double iteration_s = 0;  ///< the iteration's length alone
};

class chooses_footprint {
 public:
  virtual ~chooses_footprint() = default;
  /// The ways `job` can run its iterations: index 0 is the plain iteration, then plans in order
  /// of falling peak. Replaces an earlier offer; with none, every iteration runs plain.
  virtual void offer_variants(memory::job_id job, std::vector<footprint_variant> variants) = 0;
  /// The variant the start verdict just given to `job` is for (asked right after it).
  [[nodiscard]] virtual std::size_t chosen_variant(memory::job_id job) const = 0;
};

}  // namespace tandem::schedule
