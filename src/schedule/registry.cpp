#include "tandem/schedule/registry.hpp"

#include <algorithm>

#include "tandem/common/error.hpp"
#include "tandem/schedule/baselines.hpp"
#include "tandem/schedule/nodegroup.hpp"
#include "tandem/schedule/salus.hpp"
#include "tandem/schedule/scrooge.hpp"

namespace tandem::schedule {

const std::vector<policy_entry>& policy_entries() {
  static const std::vector<policy_entry> entries{exclusive_entry(),
                                                 temporal_entry(),
                                                 spatial_entry(),
                                                 static_entry(),
                                                 scrooge_entry(),
                                                 nodegroup_entry(),
                                                 fifo_entry(),
                                                 salus_entry(salus_discipline::srtf),
                                                 salus_entry(salus_discipline::pack),
                                                 salus_entry(salus_discipline::fair)};
  return entries;
}

const policy_entry* find_policy(std::string_view name) {
  const auto& entries = policy_entries();
  const auto found = std::find_if(entries.begin(), entries.end(),
                                  [&](const policy_entry& entry) { return entry.name == name; });
  return found == entries.end() ? nullptr : &*found;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& entry : policy_entries()) all.push_back(entry.name);
    return all;
  }();
  return names;
}

std::vector<std::string> policy_option_names(const std::string& name) {
  std::vector<std::string> names;
  if (const auto* entry = find_policy(name)) {
    for (const auto& option : entry->options) names.push_back(option.name);
  }
  return names;
}

std::unique_ptr<policy> make_policy(const std::string& name, const policy_context& context) {
  if (const auto* entry = find_policy(name)) return entry->make(context);
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  TANDEM_FAIL(config_error, "unknown policy '" + name + "'; known policies: " + known);
}

}  // namespace tandem::schedule
