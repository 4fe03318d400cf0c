#pragma once
// What a footprint plan moved in one iteration, as the runtime's executor counted it or the
// simulator's cost model predicted it.

#include <cstddef>

namespace tandem::runtime {

/// Bytes copied to host memory and back, and seconds spent running operations again (all 0 for
/// an iteration without a plan).
struct plan_traffic {
  std::size_t swapped_out_bytes = 0;
  std::size_t swapped_in_bytes = 0;
  double recompute_s = 0;
  friend bool operator==(const plan_traffic&, const plan_traffic&) = default;
};

}  // namespace tandem::runtime
