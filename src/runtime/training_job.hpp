#pragma once
// One job of a session: the body of its thread (session.cpp starts it at the job's arrival).

#include <atomic>
#include <cstdint>
#include <memory>

#include "job_device.hpp"
#include "tandem/device/backend.hpp"
#include "tandem/device/copy_channel.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/models/model.hpp"
#include "tandem/runtime/fault_injection.hpp"
#include "tandem/runtime/memory_monitor.hpp"
#include "tandem/runtime/policy_gate.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"

namespace tandem::runtime::detail {

class joint_footprint;

/// What the progress printer reads while the job runs.
struct job_progress {
  /// serving: an inference job's forward pass; idle: it waits for its next request; stopped:
  /// it left at a boundary because the run was asked to stop.
  enum class phase : int {
    pending,
    waiting,
    setup,
    training,
    serving,
    idle,
    completed,
    failed,
    stopped
  };
  std::atomic<phase> now{phase::pending};
  std::atomic<std::int64_t> iterations{0};
  std::atomic<std::int64_t> job{-1};  ///< the pool's id once arrived
};

struct training_context {
  device::backend& backend;
  memory::device_pool& pool;
  policy_gate& gate;
  memory_monitor& monitor;
  const fault_plan& faults;      ///< the isolation tests' planned failures; usually empty
  device::copy_channel& copies;  ///< the device's copy engine, shared by the jobs' swaps
  double copy_bandwidth = 0;     ///< what plans price copies at (bytes/s; 0: memcpy speed)
  /// `[policy] planner`: training jobs offer the policy plans by this planner (planned_variants)
  std::optional<std::string> policy_planner;
  /// Where jobs whose planner plans jointly (tensile) are planned together; nullptr: alone.
  joint_footprint* joint = nullptr;
  c10::Device torch_device{c10::kCPU};  ///< where the jobs' models and batches go
  std::size_t inflight_limit = 0;       ///< CUDA: Zico's in-flight limit per job stream (0: none)
  retired_streams* retired = nullptr;   ///< CUDA: where departed jobs' streams wait; see there
};

/// A result that names the job as the workload describes it, with nothing measured yet.
[[nodiscard]] job_result result_for(const job_spec& spec);

/// The job leaves the device: its memory released and its departure reported as one step of the
/// gate (no other job's gate call sees it gone from the pool but still present to the policy),
/// then its stream destroyed (the pool may use it until it forgets the job); fills the result's
/// memory measures, end and summary. A failure to leave closes the gate. Never throws.
void leave(const job_spec& spec, memory::job_id id, training_context& context,
           std::unique_ptr<device::stream>& stream, job_result& result) noexcept;

/// Runs `spec` as pool job `id` (registered with the pool and arrived at the gate): trains it,
/// or serves its requests when it is an inference job, until it completes or fails, then
/// releases its memory and departs. Never throws: failures are in the result.
[[nodiscard]] job_result train(const job_spec& spec, const models::model_options& model_options,
                               memory::job_id id, double arrival_s, training_context& context,
                               job_progress& progress) noexcept;

}  // namespace tandem::runtime::detail
