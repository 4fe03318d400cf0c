#pragma once
// What tandem accepts as input, at most: so that a mistyped value or the wrong file gets a
// message instead of a process that grows without bound or never ends. Each limit is far
// beyond any workload tandem is for (the papers' traces hold 100 jobs over hours).

#include <cstddef>
#include <cstdint>

#include "tandem/common/units.hpp"

namespace tandem::runtime {

/// A workload file: a device, a policy and up to max_jobs jobs fit in far less.
inline constexpr std::size_t max_workload_file_bytes = 16 * MiB;
/// A profile file (`tandem profile`): every allocation of one iteration per job.
inline constexpr std::size_t max_profile_file_bytes = 256 * MiB;
/// Jobs in one workload.
inline constexpr std::size_t max_jobs = 10'000;
/// A job's iterations (an inference job's requests).
inline constexpr std::int64_t max_iterations = 1'000'000'000;
/// Samples in a batch (the simulator's profile generator models no more).
inline constexpr std::int64_t max_batch_size = 65'536;
/// Arrivals, durations and budget changes lie within this many seconds of the start (7 days);
/// `tandem sim` stops a simulation that reaches it.
inline constexpr double max_horizon_s = 7 * 24 * 3600.0;

}  // namespace tandem::runtime
