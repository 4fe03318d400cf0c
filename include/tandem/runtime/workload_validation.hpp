#pragma once
// One validation of a workload for every command (run, profile, sim, maxbatch), so that a file
// gets the same verdict from each. parse_workload judges each value of the file by itself;
// validate_workload judges what needs the command line or another component. A command adds
// only what is its own: `tandem run` what this build's libtorch can do
// (validate_training_workload, session.hpp), `tandem sim` its profiles and the papers' models of
// its catalogue (validate_simulation, sim/workload_sim.hpp). No libtorch.

#include "tandem/models/option_ranges.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_policy.hpp"

namespace tandem::runtime {

/// Checks `spec` as it runs with `overrides`:
///  - jobs: one at least, max_jobs at most; batches and iterations within workload_limits.hpp
///    (a command may have changed them since the file was read);
///  - the device: a budget override above 0 and within the capacity; the region size a power of
///    two of at least 2 MiB and within the budget;
///  - the policy: its name, options and their values (validate_policy);
///  - the options of the zoo's models: names, numbers, ranges and rules, against the table the
///    zoo and the simulator share (models::check_zoo_options). Other models (the simulator's
///    papers' models) are the caller's to check.
/// Throws config_error "FILE:LINE: problem; hint".
void validate_workload(const workload& spec, const policy_overrides& overrides);

/// The device and policy parts of validate_workload alone: what a runtime of the library API,
/// whose jobs join later, is checked for.
void validate_device_and_policy(const workload& spec, const policy_overrides& overrides);

/// Checks a planner spec (NAME or NAME:KEY=VALUE,...) given as `what` ("--planner", "join:
/// planner"): a known name, with options the planner takes. Throws config_error naming `what`,
/// with the nearest known name.
void check_planner_spec(const std::string& spec, const std::string& what);

/// The job's [job.model_options] as numbers. Throws config_error at the option's line for one
/// that is not a number.
[[nodiscard]] models::option_values model_option_values(const workload& spec, const job_spec& job);

}  // namespace tandem::runtime
