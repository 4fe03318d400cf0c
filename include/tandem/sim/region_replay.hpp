#pragma once
// Which regions a job holds over an iteration, found by running its allocations and frees
// through the pool itself (a real device_pool on the CPU backend, with no device work): the
// simulator then uses the same region logic as `tandem run` instead of a model of it.

#include <cstddef>

#include "tandem/sim/job_profile.hpp"

namespace tandem::sim {

/// Fills `profile.held` (the second of two replayed iterations, so that regions cached by the
/// first are counted as they would be in steady state) and `profile.peak_live_bytes`.
/// `region_size` as in memory::pool_options. Throws config_error when the steps are not
/// balanced or free what was not allocated.
void replay_regions(job_profile& profile, std::size_t region_size);

}  // namespace tandem::sim
