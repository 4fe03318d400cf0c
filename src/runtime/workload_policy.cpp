#include "tandem/runtime/workload_policy.hpp"

#include <algorithm>
#include <memory>
#include <sstream>
#include <type_traits>
#include <variant>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/schedule/policy_capabilities.hpp"

namespace tandem::runtime {

void fail_at(const workload& spec, std::size_t line, const std::string& message) {
  throw config_error(spec.source + ":" + std::to_string(line) + ": " + message);
}

std::string describe(const option_value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using type = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<type, std::string>) {
          return "the string \"" + v + "\"";
        } else if constexpr (std::is_same_v<type, bool>) {
          return v ? "true" : "false";
        } else {
          std::ostringstream text;
          text << v;
          return text.str();
        }
      },
      value.value);
}

std::optional<std::string> planner_of(const job_spec& job, const policy_overrides& overrides) {
  if (job.kind != job_kind::training) return std::nullopt;
  return overrides.planner ? overrides.planner : job.planner;
}

std::optional<std::string> policy_planner_of(const workload& spec,
                                             const policy_overrides& overrides) {
  if (overrides.policy_planner) {
    if (*overrides.policy_planner == "none") return std::nullopt;
    return overrides.policy_planner;
  }
  if (overrides.policy && *overrides.policy != spec.policy.name) return std::nullopt;
  return spec.policy.planner;
}

std::vector<std::string> policies_choosing_footprints() {
  std::vector<std::string> names;
  for (const auto& name : schedule::policy_names()) {
    schedule::policy_context context;
    context.budget_bytes = 1;
    context.job_count = 1;
    const auto made = schedule::make_policy(name, context);
    if (schedule::capabilities_of(*made).footprint != nullptr) names.push_back(name);
  }
  return names;
}

std::vector<schedule::policy_driver::budget_change> driver_budget_schedule(
    const std::vector<budget_change>& schedule) {
  std::vector<schedule::policy_driver::budget_change> changes;
  for (const auto& change : schedule) {
    changes.push_back({change.at_s, change.bytes});
  }
  return changes;
}

schedule::job_info job_info_of(const job_spec& job, schedule::job_id id, double arrival_s) {
  schedule::job_info info;
  info.id = id;
  info.name = job.name;
  info.arrival_s = arrival_s;
  info.priority = job.priority;
  info.iterations = job.iterations;
  info.duration_s = job.duration_s;
  info.inference = job.kind == job_kind::inference;
  // What decides the memory: the network (model and its options), the batch, the optimizer's
  // state and whether there is a backward pass. The learning rate, priority and counts do not.
  std::ostringstream signature;
  signature << (info.inference ? "inference " : "training ") << job.model << " batch "
            << job.batch_size << ' ' << job.optimizer;
  for (const auto& [key, value] : job.model_options)
    signature << ' ' << key << '=' << describe(value);
  info.signature = signature.str();
  return info;
}

std::string policy_name(const workload& spec, const policy_overrides& overrides) {
  return overrides.policy.value_or(spec.policy.name);
}

std::size_t budget_of(const workload& spec, const policy_overrides& overrides) {
  const auto budget = overrides.budget.value_or(spec.device.budget);
  return budget == 0 ? spec.device.capacity : budget;
}

std::size_t largest_budget(const workload& spec, std::size_t start) {
  for (const auto& change : spec.device.budget_schedule) start = std::max(start, change.bytes);
  return start;
}

schedule::policy_context policy_context_of(const workload& spec, const policy_overrides& overrides,
                                           std::size_t budget) {
  schedule::policy_context context{budget, spec.jobs.size(), {}};
  if (overrides.policy && *overrides.policy != spec.policy.name) return context;
  for (const auto& [key, value] : spec.policy.options) {
    if (const auto* integer = std::get_if<std::int64_t>(&value.value)) {
      context.options[key] = static_cast<double>(*integer);
    } else if (const auto* real = std::get_if<double>(&value.value)) {
      context.options[key] = *real;
    } else {
      fail_at(spec, value.line,
              "policy option " + key + " must be a number, not " + describe(value));
    }
  }
  return context;
}

void require_known_policy(const std::string& name, const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    throw config_error("unknown policy '" + name + "'" + suggest_name(name, known) +
                       " (known: " + join_names(known) + ")");
  }
}

void validate_policy(const workload& spec, const policy_overrides& overrides) {
  const auto name = policy_name(spec, overrides);
  require_known_policy(name, schedule::policy_names());
  // The workload's policy options belong to its policy: a --policy override ignores them.
  if (!overrides.policy || *overrides.policy == spec.policy.name) {
    const auto policy_options = schedule::policy_option_names(name);
    for (const auto& [key, value] : spec.policy.options) {
      if (std::find(policy_options.begin(), policy_options.end(), key) == policy_options.end()) {
        fail_at(spec, value.line,
                "policy '" + name + "' has no option '" + key + "'" +
                    (policy_options.empty()
                         ? "; it takes none"
                         : suggest_name(key, policy_options) +
                               " (its options: " + join_names(policy_options) + ")"));
      }
    }
  }
  // An option that is no number names its own line; the policy then judges the values.
  auto context = policy_context_of(spec, overrides, budget_of(spec, overrides));
  std::unique_ptr<schedule::policy> made;
  try {
    made = schedule::make_policy(name, std::move(context));
  } catch (const config_error& e) {
    fail_at(spec, spec.policy.line, e.what());
  }
  const auto planner = policy_planner_of(spec, overrides);
  if (!planner) return;
  const auto where = overrides.policy_planner
                         ? std::string("--policy-planner")
                         : spec.source + ":" + std::to_string(spec.policy.planner_line);
  if (schedule::capabilities_of(*made).footprint == nullptr) {
    throw config_error(where + ": policy '" + name +
                       "' cannot run jobs under footprint plans (planner " + *planner +
                       "); the policies that can: " + join_names(policies_choosing_footprints()) +
                       ". Remove the planner, or plan each job alone with the job's own planner");
  }
  const auto known = footprint::planner_spellings();
  const auto planner_name = std::string(footprint::planner_name_of(*planner));
  if (std::find(known.begin(), known.end(), planner_name) == known.end()) {
    throw config_error(where + ": unknown planner '" + planner_name + "'" +
                       suggest_name(planner_name, known) + " (known: " + join_names(known) + ")");
  }
  try {
    static_cast<void>(footprint::make_planner(*planner));  // its options
  } catch (const usage_error& e) {
    throw config_error(where + ": " + e.what());
  }
}

}  // namespace tandem::runtime
