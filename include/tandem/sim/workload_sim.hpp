#pragma once
// A workload file simulated: `tandem sim`. Each job's profile is generated for a GPU from its
// model and batch (sim/profile_generator.hpp) or taken from profiles recorded on this machine
// by `tandem profile`; the policy is made by the same registry `tandem run` uses, plus the
// simulator-only baseline "mps-um" (every job at once under MPS, memory oversubscribed through
// unified memory). A job may be planned (sim/planned_profile.hpp): it then replays the cost
// model's prediction of its iteration under a footprint plan instead of its generated profile.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/sim/planned_profile.hpp"
#include "tandem/sim/simulator.hpp"

namespace tandem::sim {

/// The unified-memory baseline's name.
inline constexpr const char* unified_memory_policy = "mps-um";

/// The policies a simulation can run: the registry's and mps-um.
[[nodiscard]] std::vector<std::string> simulated_policy_names();

/// Where job profiles come from: exactly one of `gpu` and `recorded`.
struct sim_setup {
  std::optional<std::string> gpu;  ///< generate for this GPU (find_gpu names)
  /// The GPU's memory instead of its own (a variant of it, or memory out of the question).
  std::optional<std::size_t> gpu_memory;
  const runtime::profile_set* recorded = nullptr;  ///< or replay these, matched by job name
  runtime::policy_overrides overrides;
  std::optional<std::int64_t> batch_size;  ///< replaces every job's batch (sweeps; gpu only)
  /// Plans every training job's iteration (gpu only: recorded profiles carry no access sequence
  /// yet); none: every job replays its profile as generated.
  std::optional<job_planning> planning;
  /// Refuse (config_error) a job whose smallest iteration, under its smallest plan when plans
  /// are offered, holds more regions than the budget ever allows: it would fail under every
  /// policy. Off for searches that probe sizes by failing runs (maxbatch, batch sweeps).
  bool refuse_jobs_that_never_fit = false;
  sim_options options;
};

/// What planning made of a job's iteration, for reports: the plan's budget, and the iteration
/// with nothing planned against the one the simulation replays.
struct planned_job_summary {
  std::string job;  ///< the job's name
  std::string planner;
  std::string budget;  ///< how the budget was chosen, in words
  std::size_t budget_bytes = 0;
  std::size_t decisions = 0;           ///< swaps and recomputes in the plan
  std::size_t vanilla_peak_bytes = 0;  ///< the cost model's, nothing planned
  std::size_t planned_peak_bytes = 0;  ///< the cost model's, under the plan
  std::size_t vanilla_held_bytes = 0;  ///< most regions held, nothing planned
  std::size_t planned_held_bytes = 0;  ///< most regions held, under the plan
  double vanilla_s = 0;                ///< the solo iteration, nothing planned
  double planned_s = 0;                ///< the solo iteration under the plan
  double stall_s = 0;                  ///< of planned_s: waiting for swap-ins
  double recompute_s = 0;              ///< of planned_s: operations run again
  std::size_t swapped_out_bytes = 0;   ///< per iteration
  double copy_bandwidth = 0;           ///< bytes/s the plan was priced at
};

/// The names a workload may use when simulated with `setup` (models the generator knows, or
/// any name for recorded profiles; simulated policies; optimizers).
[[nodiscard]] runtime::workload_vocabulary simulation_vocabulary(const sim_setup& setup);

/// Checks the setup against the workload (one profile source, known GPU, budget within the
/// device, a recorded profile for every job at its batch, policy and its options). Throws
/// config_error naming the problem and the fix.
void validate_simulation(const runtime::workload& spec, const sim_setup& setup);

/// The device a simulation runs on: the GPU's memory as capacity (budget: the override, else
/// the workload's when it sets one, else the capacity), or the workload's device for recorded
/// profiles.
[[nodiscard]] device_model simulated_device(const runtime::workload& spec, const sim_setup& setup);

/// The jobs with their profiles (identical jobs share one). With `setup.planning`, each job's
/// profile is its planned iteration; `plans`, when given, receives a summary per job.
[[nodiscard]] std::vector<simulated_job> simulated_jobs(
    const runtime::workload& spec, const sim_setup& setup,
    std::vector<planned_job_summary>* plans = nullptr);

/// A recorded profile as the simulator replays it: operations from the recording (gaps between
/// them kept as host time), stretched to the median steady iteration; each fills threads/cores
/// of the machine.
[[nodiscard]] job_profile from_recorded(const runtime::job_profile& recorded, unsigned cores);

/// validate_simulation, then the simulation. `plans` as in simulated_jobs.
[[nodiscard]] runtime::run_result simulate_workload(
    const runtime::workload& spec, const sim_setup& setup,
    std::vector<planned_job_summary>* plans = nullptr);

}  // namespace tandem::sim
