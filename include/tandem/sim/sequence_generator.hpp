#pragma once
// The profile generator's tensor access sequences: the same solo iteration generate_profile
// makes, as TENSILE's tensor access sequence (footprint::access_sequence): every operation with
// its solo start and duration, every tensor with the operation that makes it and those that read
// it. What footprint planners and the footprint cost model take for the catalogue's
// paper-scale models. docs/sim-models.md, "Tensor access sequences", says what reads what.

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/profile_generator.hpp"

namespace tandem::sim {

/// One solo training iteration of `request` on `gpu` as an access sequence that agrees with
/// generate_profile(request, gpu): the same operations and durations, and a vanilla peak
/// (every tensor held from its creation to its last access, other_bytes throughout) equal to the
/// profile's peak_live_bytes but for the profile's rounding of allocations to 512 bytes. Throws
/// what generate_profile throws for a bad request.
[[nodiscard]] footprint::access_sequence generate_access_sequence(const model_request& request,
                                                                  const gpu_spec& gpu);

}  // namespace tandem::sim
