#pragma once
// An optional capability of a policy: named numbers about its decisions (iterations delayed,
// seconds shifted, steps forced...), per job and over all jobs, which the runtime and the
// simulator put in the results. A driver discovers it once (policy_capabilities.hpp); without it
// the results carry no policy statistics.

#include <string>
#include <vector>

#include "tandem/schedule/policy.hpp"

namespace tandem::schedule {

/// A named number a policy reports about its decisions.
struct policy_statistic {
  std::string name;
  double value = 0;
  friend bool operator==(const policy_statistic&, const policy_statistic&) = default;
};

class reports_statistics {
 public:
  virtual ~reports_statistics() = default;
  /// What the policy did for `job`, also after it departed.
  [[nodiscard]] virtual std::vector<policy_statistic> job_statistics(job_id job) const = 0;
  /// The same over all jobs.
  [[nodiscard]] virtual std::vector<policy_statistic> system_statistics() const = 0;
};

}  // namespace tandem::schedule
