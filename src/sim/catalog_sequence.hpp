#pragma once
// A network turned into its tensor access sequence (footprint::access_sequence, TENSILE's ITA
// and OTA): the lowering's operations with the same times, and every tensor the lowering
// allocates with the operations that make and read it (docs/sim-models.md, "Tensor access
// sequences").

#include <string>

#include "catalog_graph.hpp"
#include "catalog_iteration.hpp"
#include "tandem/footprint/access_sequence.hpp"
#include "tandem/sim/gpu_spec.hpp"

namespace tandem::sim::catalog {

/// One solo iteration of `net` (named `model`) trained by `optimizer` on `gpu`, as the lowering
/// times it and lays out its memory.
[[nodiscard]] footprint::access_sequence access_sequence_of(const network& net,
                                                            const std::string& model,
                                                            optimizer_kind optimizer,
                                                            const gpu_spec& gpu);

}  // namespace tandem::sim::catalog
