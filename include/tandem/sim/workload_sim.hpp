#pragma once
// A workload file simulated: `tandem sim`. Each job's profile is generated for a GPU from its
// model and batch (sim/profile_generator.hpp) or taken from profiles recorded on this machine
// by `tandem profile`; the policy is made by the same registry `tandem run` uses, plus the
// simulator-only baseline "mps-um" (every job at once under MPS, memory oversubscribed through
// unified memory).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/sim/simulator.hpp"

namespace tandem::sim {

/// The unified-memory baseline's name.
inline constexpr const char* unified_memory_policy = "mps-um";

/// The policies a simulation can run: the registry's and mps-um.
[[nodiscard]] std::vector<std::string> simulated_policy_names();

/// Where job profiles come from: exactly one of `gpu` and `recorded`.
struct sim_setup {
  std::optional<std::string> gpu;                  ///< generate for this GPU (find_gpu names)
  const runtime::profile_set* recorded = nullptr;  ///< or replay these, matched by job name
  runtime::policy_overrides overrides;
  std::optional<std::int64_t> batch_size;  ///< replaces every job's batch (sweeps; gpu only)
  sim_options options;
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

/// The jobs with their profiles (identical jobs share one).
[[nodiscard]] std::vector<simulated_job> simulated_jobs(const runtime::workload& spec,
                                                        const sim_setup& setup);

/// A recorded profile as the simulator replays it: operations from the recording (gaps between
/// them kept as host time), stretched to the median steady iteration; each fills threads/cores
/// of the machine.
[[nodiscard]] job_profile from_recorded(const runtime::job_profile& recorded, unsigned cores);

/// validate_simulation, then the simulation.
[[nodiscard]] runtime::run_result simulate_workload(const runtime::workload& spec,
                                                    const sim_setup& setup);

}  // namespace tandem::sim
