#pragma once
// `tandem run`, `tandem models` and `tandem profile`: real training jobs (builds with libtorch
// only).

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stop_token>
#include <string>

namespace tandem::cli {

struct run_command_options {
  std::string workload;
  std::optional<std::string> policy;
  std::optional<std::size_t> budget;
  std::optional<std::string> planner;  ///< every training job's footprint planner
  /// Replaces the [policy] table's planner: the policy chooses, at each start, between a delay
  /// and a plan by this planner ("none": no plans).
  std::optional<std::string> policy_planner;
  std::string json_path;      ///< empty: no JSON
  std::string timeline_path;  ///< empty: no timeline
  std::string report_path;    ///< empty: no HTML report
  double progress_interval_s = 1.0;
  bool quiet = false;  ///< no progress lines
};

/// Runs the workload; prints progress to `progress` and the tables to `out`. Returns the exit
/// status: 0 when every job completed, 3 when one failed (its results are still written).
/// `stop` ends the run early (session.hpp); what was done is printed and written all the same.
/// Output files are written whole or not at all (atomic_file.hpp); one that cannot be written
/// throws io_error.
int run_workload_command(const run_command_options& options, std::ostream& out,
                         std::ostream& progress, std::stop_token stop = {});

struct models_command_options {
  std::int64_t batch_size = 16;
  std::string only;  ///< one model's name; empty for the whole zoo
  bool measure = true;
};

/// Lists the zoo: parameters and, when measuring, the peak memory of a training iteration.
int list_models_command(const models_command_options& options, std::ostream& out);

struct profile_command_options {
  std::string workload;
  std::int64_t iterations = 5;
  std::string out_path = "profiles.json";
};

/// Profiles every job of the workload alone (runtime/profile.hpp) and writes them as JSON.
/// Returns 0 when every job was profiled, 3 when one failed (it is in the file with its error).
/// `stop` ends the profiling at the current job's next iteration; the profiles so far are
/// written, the unfinished ones marked as such.
int profile_workload_command(const profile_command_options& options, std::ostream& out,
                             std::ostream& progress, std::stop_token stop = {});

}  // namespace tandem::cli
