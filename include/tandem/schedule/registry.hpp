#pragma once
// Policies by name, for workload files and the command line.

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tandem/schedule/policy.hpp"

namespace tandem::schedule {

/// What a policy may need to know about the workload when it is made.
struct policy_context {
  std::size_t budget_bytes = 0;
  std::size_t job_count = 0;
  /// The policy's options by name (only names policy_option_names allows), as numbers.
  std::map<std::string, double> options;
};

[[nodiscard]] const std::vector<std::string>& policy_names();

/// The options (keys of a workload's [policy] table besides name) the policy `name` takes.
[[nodiscard]] std::vector<std::string> policy_option_names(const std::string& name);

/// Throws config_error naming the unknown policy and the known ones.
[[nodiscard]] std::unique_ptr<policy> make_policy(const std::string& name,
                                                  const policy_context& context);

}  // namespace tandem::schedule
