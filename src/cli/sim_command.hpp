#pragma once
// `tandem sim`: a workload simulated from generated or recorded profiles (no libtorch needed).

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace tandem::cli {

struct sim_command_options {
  std::string workload;
  std::optional<std::string> gpu;         ///< generate profiles for this GPU
  std::optional<std::size_t> gpu_memory;  ///< replaces the GPU's memory (with gpu)
  std::string profiles_path;              ///< or replay profiles recorded by `tandem profile`
  std::optional<std::string> policy;      ///< replaces the workload's policy
  std::optional<std::size_t> budget;      ///< replaces the workload's budget
  std::vector<std::string> compare;       ///< run each of these policies side by side
  std::vector<std::int64_t> sweep_batch;  ///< run every batch size (with --gpu)
  std::string json_path;                  ///< empty: no JSON
  std::string timeline_path;              ///< empty: no timeline
  std::string report_path;                ///< empty: no HTML report
  std::uint64_t seed = 1;
  double jitter = 0;
  /// Plans every training job's iteration with this footprint planner (with --gpu).
  std::optional<std::string> planner;
  /// The plans' budget: "75%" of each job's vanilla peak or a size; none: each job's share of
  /// the device's budget (sim::job_planning).
  std::optional<std::string> plan_budget;
  /// Replaces the [policy] table's planner: the policy chooses, at each start, between a delay
  /// and a plan by this planner ("none": no plans).
  std::optional<std::string> policy_planner;
};

/// The footprint planners' names, for the help of --planner: "none, vdnn-all, ...".
[[nodiscard]] std::string planner_names_text();

/// Simulates the workload and prints what `tandem run` prints (one policy), or a comparison
/// table (--compare, --sweep-batch), then what planning made of each job (--planner). Returns 0,
/// or 3 when a job of a single run failed.
int sim_workload_command(const sim_command_options& options, std::ostream& out);

}  // namespace tandem::cli
