#pragma once
// The cost model: how long an operation takes alone on a GPU and how much of it it fills
// (docs/sim-models.md, "Cost model").

#include <vector>

#include "catalog_graph.hpp"
#include "tandem/sim/gpu_spec.hpp"

namespace tandem::sim::catalog {

struct op_cost {
  double seconds = 0;  ///< device seconds, alone on the device
  double fill = 1;
  double host_s = 0;  ///< host seconds to issue its kernels (docs/sim-models.md, "Host time")
};

/// A roofline per operation: the larger of its compute time and its memory time, each at the
/// fraction of the peak its kind reaches and on the share of the device its thread blocks fill,
/// and at least the shortest kernel per kernel; host time per kernel apart (it fills nothing).
/// Host-to-device copies run at the host link's rate.
[[nodiscard]] op_cost cost_of(op_kind kind, const work& w, const gpu_spec& gpu);

/// When each operation of a solo iteration completes on the device, in seconds from its start,
/// given each one's cost in order: the host issues them, the iteration's own host time
/// (`gpu.iteration_host_s`) first, as far ahead of the device as `gpu.in_flight_ops` lets it
/// (src/sim/host_stream.hpp). The last is the solo iteration.
[[nodiscard]] std::vector<double> solo_completions(const std::vector<op_cost>& costs,
                                                   const gpu_spec& gpu);

}  // namespace tandem::sim::catalog
