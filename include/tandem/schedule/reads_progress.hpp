#pragma once
// An optional capability of a policy: it reads running jobs' progress when it decides (how far
// each is through its iteration's region events, what it holds now), from the runtime's memory
// monitor or the simulator's state. A driver discovers it once (policy_capabilities.hpp) and
// hands it its progress_source; a policy without it never asks.

#include <cstddef>

#include "tandem/schedule/policy.hpp"

namespace tandem::schedule {

/// Where a running job is within its iteration, as the driver observes it: the regions it has
/// taken or returned since the iteration started, and what it holds now.
struct job_progress_view {
  std::size_t region_events = 0;
  std::size_t held_bytes = 0;
};

/// Running jobs' progress as a driver sees it. Read-only; called under the driver's
/// serialization.
class progress_source {
 public:
  virtual ~progress_source() = default;
  [[nodiscard]] virtual job_progress_view progress(job_id job) const = 0;
};

class reads_progress {
 public:
  virtual ~reads_progress() = default;
  /// The view of running jobs' progress to read from now on (nullptr: none, e.g. once the
  /// driver that owns it is done).
  virtual void set_progress_source(const progress_source* source) = 0;
};

}  // namespace tandem::schedule
