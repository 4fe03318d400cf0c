#pragma once
// Policies by name, for workload files and the command line: one list of entries
// (policy_entry.hpp), each built by its policy's own file, from which everything else derives.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/policy_entry.hpp"

namespace tandem::schedule {

/// Every policy, in the order listings show them.
[[nodiscard]] const std::vector<policy_entry>& policy_entries();

/// The entry named `name`; nullptr when there is none.
[[nodiscard]] const policy_entry* find_policy(std::string_view name);

/// The entries' names, in order.
[[nodiscard]] const std::vector<std::string>& policy_names();

/// The options (keys of a workload's [policy] table besides name) the policy `name` takes, in
/// its entry's order; empty for a policy without options or an unknown one.
[[nodiscard]] std::vector<std::string> policy_option_names(const std::string& name);

/// Throws config_error naming the unknown policy and the known ones, or the entry's own for a
/// bad option value.
[[nodiscard]] std::unique_ptr<policy> make_policy(const std::string& name,
                                                  const policy_context& context);

}  // namespace tandem::schedule
