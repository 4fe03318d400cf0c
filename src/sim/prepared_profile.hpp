#pragma once
// A job's profile prepared for the simulator's replay: its operations merged into segments of
// equal fill, its live bytes after each allocation, and its memory events for the policies
// that learn from them.

#include <cstddef>
#include <vector>

#include "host_stream.hpp"
#include "tandem/schedule/policy.hpp"
#include "tandem/sim/job_profile.hpp"

namespace tandem::sim::detail {

/// A profile prepared for replay. Consecutive operations of equal fill without host time are one
/// segment: only a change of fill changes how jobs share the device, so only that needs an
/// event. An operation with host time is a segment of its own (host and device overlap across
/// operations, src/sim/host_stream.hpp).
struct prepared_profile {
  struct segment {
    double start = 0;  ///< cumulative solo seconds at the segment's start
    double end = 0;    ///< and at its end
    double fill = 1;
    double touch_rate = 0;  ///< bytes touched per device second
  };
  const job_profile* profile = nullptr;
  std::vector<segment> segments;
  std::vector<stream_stage> stages;     ///< host and device seconds of each segment
  std::vector<std::size_t> live_after;  ///< live bytes after each allocation step
  std::size_t persistent = 0;
  /// The iteration's allocations and frees with the regions held after each (for policies
  /// that learn from them), and when each allocation happens (where group boundaries fall).
  std::vector<schedule::memory_event> memory;
  std::vector<double> allocation_at;

  explicit prepared_profile(const job_profile& p);

  /// Live bytes (persistent included) `position` solo seconds into an iteration.
  [[nodiscard]] std::size_t live_at(double position) const;
  /// The same without the allocations at `position`: where a job waits for the regions of one.
  [[nodiscard]] std::size_t live_before(double position) const;
};

}  // namespace tandem::sim::detail
