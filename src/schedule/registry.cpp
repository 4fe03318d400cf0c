#include "tandem/schedule/registry.hpp"

#include <cmath>

#include "tandem/common/error.hpp"
#include "tandem/schedule/baselines.hpp"
#include "tandem/schedule/scrooge.hpp"

namespace tandem::schedule {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names{"exclusive", "temporal", "spatial", "static",
                                              "scrooge"};
  return names;
}

std::vector<std::string> policy_option_names(const std::string& name) {
  if (name == "scrooge") return {"ramp_start", "ramp_iterations", "fallback_threshold", "poll"};
  return {};  // no baseline takes options
}

std::unique_ptr<policy> make_policy(const std::string& name, const policy_context& context) {
  if (name == "exclusive") return std::make_unique<exclusive_policy>();
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
    option("poll", options.poll_s);
    double ramp_iterations = static_cast<double>(options.ramp_iterations);
    option("ramp_iterations", ramp_iterations);
    TANDEM_EXPECTS(
        ramp_iterations == std::floor(ramp_iterations), config_error,
        "scrooge: ramp_iterations must be a whole number, not " + std::to_string(ramp_iterations));
    options.ramp_iterations = static_cast<std::int64_t>(ramp_iterations);
    return std::make_unique<scrooge_policy>(context.budget_bytes, options);
  }
  if (name == "static") {
    return std::make_unique<static_partition_policy>(context.budget_bytes, context.job_count);
  }
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  TANDEM_FAIL(config_error, "unknown policy '" + name + "'; known policies: " + known);
}

}  // namespace tandem::schedule
