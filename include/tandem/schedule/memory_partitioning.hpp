#pragma once
// An optional capability of a policy: per-job memory partitions (the static baseline). The
// runtime applies them with device_pool::set_job_limit, a budget of the job's own inside the
// pool's; the simulator fails a job that would exceed its own. A driver discovers it once
// (policy_capabilities.hpp); without it no job has a limit of its own.

#include <cstddef>
#include <optional>

#include "tandem/schedule/policy.hpp"

namespace tandem::schedule {

class memory_partitioning {
 public:
  virtual ~memory_partitioning() = default;
  /// Bytes of regions `job` may hold; empty for no per-job limit. Asked after on_arrival and
  /// after every departure and budget change.
  [[nodiscard]] virtual std::optional<std::size_t> memory_limit(job_id job) const = 0;
};

}  // namespace tandem::schedule
