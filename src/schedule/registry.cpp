#include "tandem/schedule/registry.hpp"

#include <cmath>
#include <string>
#include <type_traits>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/baselines.hpp"
#include "tandem/schedule/nodegroup.hpp"
#include "tandem/schedule/salus.hpp"
#include "tandem/schedule/scrooge.hpp"

namespace tandem::schedule {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names{"exclusive", "temporal",  "spatial", "static",
                                              "scrooge",   "nodegroup", "fifo",    "srtf",
                                              "pack",      "fair"};
  return names;
}

std::vector<std::string> policy_option_names(const std::string& name) {
  if (name == "scrooge") return {"ramp_start", "ramp_iterations", "fallback_threshold"};
  if (name == "nodegroup")
    return {"split_mib", "groups_per_phase", "streams", "profile_iterations"};
  return {};  // no baseline takes options
}

std::unique_ptr<policy> make_policy(const std::string& name, const policy_context& context) {
  // Salus's FIFO is the exclusive baseline: jobs in arrival order, one at a time (Salus §5.1).
  if (name == "exclusive") return std::make_unique<exclusive_policy>();
  if (name == "fifo") return std::make_unique<exclusive_policy>("fifo");
  if (name == "srtf")
    return std::make_unique<salus_policy>(context.budget_bytes, salus_discipline::srtf);
  if (name == "pack")
    return std::make_unique<salus_policy>(context.budget_bytes, salus_discipline::pack);
  if (name == "fair")
    return std::make_unique<salus_policy>(context.budget_bytes, salus_discipline::fair);
  if (name == "temporal") return std::make_unique<temporal_policy>();
  if (name == "spatial") return std::make_unique<spatial_policy>();
  if (name == "scrooge") {
    scrooge_options options;
    const auto& given = context.options;
    const auto option = [&](const char* key, double& target) {
      if (const auto found = given.find(key); found != given.end()) target = found->second;
    };
    option("ramp_start", options.ramp_start);
    option("fallback_threshold", options.fallback_threshold);
    double ramp_iterations = static_cast<double>(options.ramp_iterations);
    option("ramp_iterations", ramp_iterations);
    TANDEM_EXPECTS(
        ramp_iterations == std::floor(ramp_iterations), config_error,
        "scrooge: ramp_iterations must be a whole number, not " + std::to_string(ramp_iterations));
    options.ramp_iterations = static_cast<std::int64_t>(ramp_iterations);
    return std::make_unique<scrooge_policy>(context.budget_bytes, options);
  }
  if (name == "nodegroup") {
    nodegroup_options options;
    const auto& given = context.options;
    const auto whole = [&](const char* key, auto& target, double least) {
      const auto found = given.find(key);
      if (found == given.end()) return;
      const double value = found->second;
      TANDEM_EXPECTS(value == std::floor(value) && value >= least, config_error,
                     std::string("nodegroup: ") + key + " must be a whole number >= " +
                         std::to_string(static_cast<long long>(least)) + ", not " +
                         std::to_string(value));
      target = static_cast<std::remove_reference_t<decltype(target)>>(value);
    };
    if (const auto found = given.find("split_mib"); found != given.end()) {
      TANDEM_EXPECTS(found->second >= 0, config_error,
                     "nodegroup: split_mib must be >= 0 (0 chooses the split per job), not " +
                         std::to_string(found->second));
      options.split_bytes = static_cast<std::size_t>(found->second * static_cast<double>(MiB));
    }
    whole("groups_per_phase", options.groups_per_phase, 1);
    whole("streams", options.streams, 1);
    whole("profile_iterations", options.profile_iterations, 1);
    return std::make_unique<nodegroup_policy>(context.budget_bytes, options);
  }
  if (name == "static") {
    return std::make_unique<static_partition_policy>(context.budget_bytes, context.job_count);
  }
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  TANDEM_FAIL(config_error, "unknown policy '" + name + "'; known policies: " + known);
}

}  // namespace tandem::schedule
