#pragma once
// An optional capability of a policy: it says why a job waits when the reason is more than
// taking turns (Salus's admission: what the job needs against what the admitted jobs keep), for
// progress lines and logs. A driver discovers it once (policy_capabilities.hpp); without it a
// job's wait has no reason beyond its turn.

#include <string>

#include "tandem/schedule/policy.hpp"

namespace tandem::schedule {

class explains_waiting {
 public:
  virtual ~explains_waiting() = default;
  /// Why `job` is waiting, in words a user can act on; empty when it only waits for its turn.
  [[nodiscard]] virtual std::string waiting_reason(job_id job) const = 0;
};

}  // namespace tandem::schedule
