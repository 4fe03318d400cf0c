#pragma once
// The discrete-event simulator: jobs advance through their profiles in virtual time, driven by
// the very policy objects `tandem run` uses, through the same interface and the same rules as
// the runtime's policy gate (ask before every iteration; ask every waiting job again after
// every event; a wait-until verdict wakes the job at that time).
//
// Compute: operations running at once share the device by processor sharing weighted by their
// fill: while the fills of the running operations add up to at most 1 every job runs at solo
// speed, above that each runs at 1 / (sum of fills). Memory: each job takes and returns regions
// as its profile's region curve says (replayed through the pool: sim::replay_regions), stretched
// to the speed it actually runs at; a take beyond the budget (or a static policy's limit) fails
// the job with an out-of-memory error, as the pool would. Unified memory (the MPS baseline):
// no budget; while the jobs hold more than the capacity, the oversubscribed share of every byte
// an operation touches crosses PCIe (docs/simulator.md).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tandem/runtime/fault_injection.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_limits.hpp"
#include "tandem/schedule/policy.hpp"
#include "tandem/sim/footprint_variants.hpp"
#include "tandem/sim/job_profile.hpp"

namespace tandem::sim {

struct device_model {
  std::string description;
  std::size_t capacity = 0;  ///< bytes of device memory
  std::size_t budget = 0;    ///< bytes the jobs may hold together; 0: the capacity
  /// MPS with unified memory: the budget is not enforced; memory beyond the capacity pages.
  bool unified_memory = false;
  double pcie_bandwidth = 16e9;  ///< bytes/s that paging moves, shared by the paging jobs
  /// Host cores the jobs' host threads share (profiles with host time, src/sim/host_stream.hpp);
  /// 0: each job has one of its own.
  unsigned host_cores = 0;
  /// Operations a job's host may issue ahead of its device (Zico's in-flight limit); 0: none.
  std::size_t in_flight_ops = 0;
};

struct sim_options {
  /// Each iteration's duration is multiplied by exp(N(0, jitter)) drawn from `seed`, to model
  /// run-to-run noise; 0 replays the profiles exactly.
  double jitter = 0;
  std::uint64_t seed = 1;
  /// Where a CSV timeline goes (time_s,job,event,held_bytes; events iteration_start,
  /// iteration_end, borrow, return, completed, failed; held_bytes: the job's regions after it),
  /// or nullptr.
  std::ostream* timeline = nullptr;
  /// Simulated seconds after which the simulation stops with a config_error rather than run on.
  double horizon_s = runtime::max_horizon_s;
  /// Jobs made to fail on purpose at an allocation, counted as the runtime counts them: the
  /// persistent tensors first (one allocation each, at its build), then each iteration's
  /// allocations in its profile's order. The contract tests' departures mid-iteration.
  runtime::fault_plan faults;
};

/// How far a job's iteration had got when: positions (solo seconds into the profile it
/// replayed, never decreasing) and the seconds since the iteration's start at which it was
/// there. A pause (a wait for memory or a group) is one position at two times.
struct iteration_progress {
  std::vector<double> position_s;
  std::vector<double> at_s;
};

/// Plans made again as jobs come and go, and as the operations' times drift (TENSILE §4.5): the
/// profile a job replays from its next iteration start, given the jobs planned together with it
/// that are present then. Shared by those jobs, which it numbers 0..n-1
/// (`simulated_job::member`). Every profile it gives a job holds the regions that job's first
/// profile holds between iterations.
class joint_replanning {
 public:
  virtual ~joint_replanning() = default;
  /// The profile `member` replays while the members in `present` (ascending; `member` among
  /// them) are present.
  [[nodiscard]] virtual std::shared_ptr<const job_profile> profile_for(
      std::size_t member, const std::vector<std::size_t>& present) = 0;
  /// A whole iteration of `member` that replayed `replayed` went as `progress` says: the times
  /// its operations took beside the others, from which drift is judged.
  virtual void measured(std::size_t member, const job_profile& replayed,
                        const iteration_progress& progress) = 0;
};

struct simulated_job {
  runtime::job_spec spec;  ///< name, batch, iterations or duration, arrival, priority, threads
  std::shared_ptr<const job_profile> profile;
  /// Its iteration under footprint plans (footprint_variants.hpp), offered to a policy that
  /// chooses among them when the job arrives; each start runs the variant the policy chose.
  /// Null: every iteration replays `profile`. Its plain variant is `profile`.
  std::shared_ptr<const footprint_variants> variants;
  /// Its plans made again with the others' as jobs arrive and leave, each iteration replaying
  /// the plan for the jobs present at its start; null: no re-planning. Not with `variants`.
  std::shared_ptr<joint_replanning> replanning;
  std::size_t member = 0;  ///< its number in `replanning`
};

/// Runs `jobs` under `policy` on `device` and returns what `tandem run` would report (no losses:
/// nothing is trained). `budget_schedule` changes the budget at its times. Deterministic for a
/// given seed. Throws usage_error for a job without a profile or with an empty one, and
/// config_error when the jobs would run past `options.horizon_s`.
[[nodiscard]] runtime::run_result simulate(
    const std::vector<simulated_job>& jobs, schedule::policy& policy, const device_model& device,
    const std::vector<runtime::budget_change>& budget_schedule = {},
    const sim_options& options = {});

}  // namespace tandem::sim
