#pragma once
// One policy as the registry (registry.hpp) knows it: its name, a line saying what it does, its
// options and how to make it. Each policy's own file builds its entry (scrooge_entry() in
// scrooge.cpp...), and the registry lists the entries in one place; no static initializer
// registers anything, since a static library drops objects nothing refers to.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/policy_options.hpp"

namespace tandem::schedule {

/// What a policy may need to know about the workload when it is made.
struct policy_context {
  std::size_t budget_bytes = 0;
  std::size_t job_count = 0;
  /// The policy's options by name, as numbers (from a workload's [policy] table or --set).
  /// The entry's options are parsed and checked from here; other names are not looked at.
  std::map<std::string, double> options;
};

struct policy_entry {
  std::string name;
  std::string description;           ///< one line: what it does
  std::vector<option_spec> options;  ///< what its options struct takes; empty: none
  /// Parses and checks context.options (config_error naming the policy, the option, the value
  /// and the range), then makes the policy.
  std::function<std::unique_ptr<policy>(const policy_context&)> make;
};

}  // namespace tandem::schedule
