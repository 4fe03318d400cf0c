#pragma once
// The cost model: how long an operation takes alone on a GPU and how much of it it fills
// (docs/sim-models.md, "Cost model").

#include "catalog_graph.hpp"
#include "tandem/sim/gpu_spec.hpp"

namespace tandem::sim::catalog {

struct op_cost {
  double seconds = 0;
  double fill = 1;
};

/// A roofline per operation: the larger of its compute time and its memory time, each at the
/// fraction of the peak its kind reaches and on the share of the device its thread blocks fill,
/// plus a launch gap per kernel. Host-to-device copies run at the host link's rate.
[[nodiscard]] op_cost cost_of(op_kind kind, const work& w, const gpu_spec& gpu);

}  // namespace tandem::sim::catalog
