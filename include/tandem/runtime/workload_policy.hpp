#pragma once
// The policy and budget a run of a workload uses, with command-line overrides: shared by
// `tandem run` and `tandem sim`, so that both read a workload's [policy] the same way.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tandem/runtime/workload.hpp"
#include "tandem/schedule/policy_driver.hpp"
#include "tandem/schedule/registry.hpp"

namespace tandem::runtime {

/// What a command line may replace.
struct policy_overrides {
  std::optional<std::string> policy;  ///< replaces the workload's [policy] name
  std::optional<std::size_t> budget;  ///< replaces the workload's budget
  /// Replaces every training job's `planner` (a name of footprint::planner_names()).
  std::optional<std::string> planner;
  /// Replaces the [policy] table's `planner` (a planner spec; "none": no plans).
  std::optional<std::string> policy_planner;
};

/// The policy's name: the override, else the workload's.
[[nodiscard]] std::string policy_name(const workload& spec, const policy_overrides& overrides);

/// The footprint planner whose plans the policy may run jobs under: the override ("none": no
/// planner), else the workload's [policy] planner when the workload's own policy runs.
[[nodiscard]] std::optional<std::string> policy_planner_of(const workload& spec,
                                                           const policy_overrides& overrides);

/// Throws config_error naming `name` (with a near miss) and `known` when `name` is not one of
/// them: the policy names a command knows (the simulator adds its own mps-um).
void require_known_policy(const std::string& name, const std::vector<std::string>& known);

/// The registered policies that can run jobs under footprint plans (schedule::chooses_footprint).
[[nodiscard]] std::vector<std::string> policies_choosing_footprints();

/// A training job's footprint planner: the override, else the job's own; none for an inference
/// job or when neither names one.
[[nodiscard]] std::optional<std::string> planner_of(const job_spec& job,
                                                    const policy_overrides& overrides);

/// The budget in bytes: the override, else the workload's, else the capacity.
[[nodiscard]] std::size_t budget_of(const workload& spec, const policy_overrides& overrides);

/// The most the run's budget ever is: `start` (the budget it begins with) or a budget of the
/// workload's schedule above it. A job that needs more can never run.
[[nodiscard]] std::size_t largest_budget(const workload& spec, std::size_t start);

/// What make_policy needs: the budget, the job count and the [policy] options as numbers (the
/// workload's options only when its own policy runs; an override starts from defaults).
[[nodiscard]] schedule::policy_context policy_context_of(const workload& spec,
                                                         const policy_overrides& overrides,
                                                         std::size_t budget);

/// Checks the policy name against the registry, its options and their values (by making the
/// policy once). Throws config_error naming the file, the line and a fix. Part of
/// validate_workload (workload_validation.hpp), which every command calls.
void validate_policy(const workload& spec, const policy_overrides& overrides);

/// What a policy is told about `job` when it arrives as `id` at `arrival_s`: its counts, kind and
/// a signature shared by every job with the same model, model options, batch, optimizer and kind.
/// Used by `tandem run` and `tandem sim` alike.
[[nodiscard]] schedule::job_info job_info_of(const job_spec& job, schedule::job_id id,
                                             double arrival_s);

/// A workload's budget_schedule as the policy driver keeps it. Used by `tandem run` and
/// `tandem sim` alike.
[[nodiscard]] std::vector<schedule::policy_driver::budget_change> driver_budget_schedule(
    const std::vector<budget_change>& schedule);

/// "FILE:LINE: message" as a config_error.
[[noreturn]] void fail_at(const workload& spec, std::size_t line, const std::string& message);

/// A workload value as a message shows it ("the string \"x\"", "true", "3").
[[nodiscard]] std::string describe(const option_value& value);

}  // namespace tandem::runtime
