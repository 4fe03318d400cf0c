#pragma once
// A network turned into a job_profile: the iteration's operations timed on a GPU, its memory
// steps, the tensors it keeps between iterations (docs/sim-models.md, "Memory").

#include <string>

#include "catalog_graph.hpp"
#include "catalog_iteration.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/job_profile.hpp"

namespace tandem::sim::catalog {

/// One solo iteration of `net` (named `model`) trained by `optimizer` on `gpu`.
[[nodiscard]] job_profile lower(const network& net, const std::string& model,
                                optimizer_kind optimizer, const gpu_spec& gpu);

}  // namespace tandem::sim::catalog
