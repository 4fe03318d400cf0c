#pragma once
// Runs a workload: real libtorch training jobs, each on its own thread, side by side on one
// pool under one policy. This is what `tandem run` calls.
//
// For every job, at its arrival time: the pool gets a local area for it, the policy hears of
// it, and a thread starts that binds itself to the job (every tensor it makes lands in the pool
// under the job), then loops: wait for the policy's start, build the model and optimizer on the
// first start, train one iteration, report it. An inference job builds its model on its first
// start and runs one warm-up forward pass (its iteration 0), then serves requests arriving as a
// Poisson process: for each, it sleeps until the request arrives, waits for the policy's start,
// runs one forward pass without gradients and reports it as an iteration; the latency (arrival
// to the end of the pass) goes into its result. A job that fails (an allocation the pool cannot
// meet, a bad option the model rejects) drops its tensors, releases its memory and departs; the
// others carry on. The policy gate's job-switch samples go into the run's result. Needs
// libtorch (tandem_training).
//
// Stopping (run_options::stop, e.g. Ctrl-C): no job arrives and no iteration, group or request
// starts after the request; each job leaves at its next boundary (one waiting at the gate or
// for a request is woken at once) through the usual release and departure, with status
// `stopped` and the iterations it completed. Jobs not yet arrived are listed as stopped with
// none. The budget schedule's sleeps end too, so run_workload returns within about one
// iteration.

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>

#include "tandem/runtime/fault_injection.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_policy.hpp"

namespace tandem::runtime {

struct run_options {
  policy_overrides overrides;        ///< the policy and budget replacing the workload's
  std::ostream* timeline = nullptr;  ///< the memory timeline as CSV (memory_monitor.hpp)
  std::ostream* progress = nullptr;  ///< live progress lines while the jobs run
  double progress_interval_s = 1.0;
  /// Record each job's last iteration in detail (job_result::last_iteration): every allocation
  /// and free, and the regions held. What tandem profile writes.
  bool record_allocations = false;
  /// Jobs made to fail on purpose (fault_injection.hpp): the isolation tests' lever.
  fault_plan faults;
  /// A stop request ends the run early (see above); none by default.
  std::stop_token stop;
};

/// The names a workload may use in this build: models of the zoo, policies, optimizers.
[[nodiscard]] workload_vocabulary training_vocabulary();

/// Why footprint plans are refused on a CUDA device: the access recorder and the executor
/// follow a job's operations on its own threads, and on CUDA the backward pass runs on
/// libtorch's autograd thread, shared by every job on the device.
inline constexpr const char* cuda_plans_unsupported =
    "footprint plans (planners) run on the CPU backend only: on a CUDA device the backward pass "
    "runs on libtorch's shared autograd thread, which tandem's recorder and executor do not "
    "follow yet";

/// validate_workload (workload_validation.hpp: the checks every command shares) with the
/// options' overrides, then what only training judges: the device kind this build's libtorch
/// can train on, and that a CUDA device runs no footprint plans. Throws config_error
/// "FILE:LINE: problem; hint". run_workload calls it first.
void validate_training_workload(const workload& spec, const run_options& options);

/// Bytes per second the cpu backend's copy streams move for `device`'s `copy_bandwidth` (0 on a
/// CUDA device, whose copies no plan prices): "auto"
/// this machine's matched rate (torch/matched_copy_bandwidth.hpp, measured once per process), a
/// fixed rate as written, 0 for "memcpy" (as fast as memory copies go). What run_workload gives
/// the backend and `tandem plan` prices swaps at.
[[nodiscard]] double copy_bandwidth_of(const device_spec& device);

/// Runs every job to completion, failure or a stop, and returns what was measured. Throws
/// config_error for an invalid workload (nothing runs then) and device_error when the device cannot
/// be set up; a job's own failure is a result, not an exception.
[[nodiscard]] run_result run_workload(const workload& spec, const run_options& options = {});

}  // namespace tandem::runtime
