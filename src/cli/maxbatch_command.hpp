#pragma once
// `tandem maxbatch`: the largest batch at which N identical jobs complete side by side under a
// policy, against the largest at which one completes alone (Waterwave Table 1), found by a search
// over runs: real (builds with libtorch) or simulated (--sim --gpu NAME), of jobs as they are or
// planned by a footprint planner (--planner, simulated only for now).

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "tandem/runtime/workload_limits.hpp"

namespace tandem::cli {

struct maxbatch_command_options {
  std::string workload;
  std::optional<std::string> policy;  ///< policy of the co-located runs; default: the workload's
  bool simulate = false;              ///< simulated runs (needs gpu) instead of training
  std::optional<std::string> gpu;     ///< the simulated GPU
  std::int64_t jobs = 2;              ///< identical jobs side by side
  std::int64_t iterations = 3;        ///< per job and run
  std::vector<std::string> settings;  ///< policy options as KEY=VALUE
  std::string sweep;                  ///< KEY=V1,V2,...: one search per value; empty: none
  std::int64_t low = 1;               ///< the first batch tried
  std::optional<std::int64_t> high;   ///< never tried beyond; default: doubling until a failure
  std::string json_path;              ///< empty: no JSON
  /// Every job's iteration planned by this footprint planner. A real probe fits when every job
  /// completed without passive swapping beside its plan (its iterations before the plan may
  /// swap passively: that is how it is recorded under the budget).
  std::optional<std::string> planner;
  /// The plans' budget ("75%" of the job's vanilla peak, or a size); none: each job's share of
  /// the device's budget (the budget / --jobs), in regions held. Without `planner`, the jobs
  /// are planned by the default planner.
  std::optional<std::string> plan_budget;
};

/// Most --jobs: every run of the search runs them all, and a run's time grows with the square
/// of their number.
inline constexpr std::int64_t max_colocated_jobs = 64;
/// Most --iterations per job and run.
inline constexpr std::int64_t max_probe_iterations = 1000;

/// Searches first with one job alone under exclusive, then with the N copies of the workload's
/// first job under the policy (once per --sweep value); prints a line per run to `progress` and
/// the table to `out`. Returns 0, or 3 when a job failed for another reason than memory (the
/// search cannot judge a batch then). Throws config_error for bad input before anything runs,
/// and when the --low batch does not fit even alone. `stop` ends the search after the run under
/// way (a real run stops at its jobs' next iteration): a search cut short has no answer, so it
/// says so and writes no table or JSON (returning 3).
int maxbatch_command(const maxbatch_command_options& options, std::ostream& out,
                     std::ostream& progress, std::stop_token stop = {});

// --- the search, apart from what it runs ----------------------------------------------------

enum class probe_outcome {
  fits,           ///< every job completed
  out_of_memory,  ///< a job ran out of memory
  failed,         ///< a job failed for another reason: the search cannot judge the batch
  refused,        ///< the batch cannot be run (say, beyond what the profile generator models)
};

/// What a run at one batch size showed.
struct probe_result {
  probe_outcome outcome = probe_outcome::fits;
  std::string detail;  ///< for the progress line, after "batch B: "
  double aggregate_samples_per_s = 0;
};

/// Runs the jobs at one batch size.
using batch_probe = std::function<probe_result(std::int64_t batch)>;

/// Without a high bound, doubling stops here: the largest batch a job may have.
inline constexpr std::int64_t doubling_limit = runtime::max_batch_size;

struct search_bounds {
  std::int64_t low = 1;
  std::optional<std::int64_t> high;  ///< never tried beyond
  /// Where the doubling is expected to fail (the co-located search: the solo max + 1): it goes
  /// no further until that batch has been tried, and on past it when it fits.
  std::optional<std::int64_t> expected_failure;
};

struct search_result {
  std::int64_t max_batch = 0;  ///< 0: not even the low batch fits
  probe_result at_max;         ///< the run at max_batch
  /// No run failed up to the search's bound (high, doubling_limit, or a batch that cannot be
  /// run): the largest may be more.
  bool no_failure_found = false;
  std::string error;  ///< a job failed for another reason than memory: the search stopped there
  int probes = 0;
};

/// Tries the low batch, doubles until a run fails (up to the high bound), then bisects between
/// the last batch that fit and the first that failed. A failure other than memory stops it with
/// an error; so does a refusal of the low batch, while a later one ends it at the last fit.
[[nodiscard]] search_result search_max_batch(const batch_probe& probe, const search_bounds& bounds,
                                             std::ostream& progress);

}  // namespace tandem::cli
