#pragma once
// `tandem plan`: a footprint plan (what to swap and recompute) for every training job of a
// workload, made by a planner from the job's access sequence and priced by the cost model
// (builds with libtorch only: a job without a recorded sequence is profiled here).

#include <iosfwd>
#include <optional>
#include <stop_token>
#include <string>

namespace tandem::cli {

struct plan_command_options {
  std::string workload;
  std::optional<std::string> planner;  ///< replaces every job's `planner`
  std::optional<std::string> budget;   ///< "75%" of the vanilla peak or a size; replaces
                                       ///< every job's `plan_budget`
  std::string json_path;               ///< empty: no JSON
  std::string profile_path;            ///< empty: record every job's sequence here
};

/// For every training job: its access sequence (from the profile when it has the job's, else
/// recorded by profiling the job alone for 2 iterations), a plan by its planner at its budget,
/// and the plan's measures at the workload's copy bandwidth; prints a table to `out` and
/// progress to `progress`, and writes the plans as JSON (whole or not at all). Returns 0, or 3
/// when a job's sequence could not be recorded (its row says why). Bad input (an unknown
/// planner, no planner for a job, a bad budget, a file that cannot be read or written) throws
/// config_error or io_error before anything is recorded. `stop` ends the recording at the job's
/// next iteration; then nothing is planned or written.
int plan_workload_command(const plan_command_options& options, std::ostream& out,
                          std::ostream& progress, std::stop_token stop = {});

}  // namespace tandem::cli
