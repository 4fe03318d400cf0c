#include "tandem/schedule/registry.hpp"

#include "tandem/common/error.hpp"
#include "tandem/schedule/baselines.hpp"

namespace tandem::schedule {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names{"exclusive", "temporal", "spatial", "static"};
  return names;
}

std::vector<std::string> policy_option_names(const std::string& /*name*/) {
  return {};  // no baseline takes options
}

std::unique_ptr<policy> make_policy(const std::string& name, const policy_context& context) {
  if (name == "exclusive") return std::make_unique<exclusive_policy>();
  if (name == "temporal") return std::make_unique<temporal_policy>();
  if (name == "spatial") return std::make_unique<spatial_policy>();
  if (name == "static") {
    return std::make_unique<static_partition_policy>(context.budget_bytes, context.job_count);
  }
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  TANDEM_FAIL(config_error, "unknown policy '" + name + "'; known policies: " + known);
}

}  // namespace tandem::schedule
