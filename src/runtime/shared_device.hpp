#pragma once
// Everything the jobs of one run share on one device: the backend (the CPU backend or a CUDA
// GPU, job_device.hpp), the pool (libtorch's allocator for that device while it lives), the memory
// monitor, the policy and its gate, the memory waits and the copy engine. `tandem run`
// (session.cpp) starts the zoo's jobs on it; the library API (tandem/api/runtime.hpp) lets the
// user's own threads join it. Either way the jobs see the same training_context, so a user's loop
// is gated, measured and isolated as a zoo job is.

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "job_device.hpp"
#include "joint_footprint.hpp"
#include "tandem/device/copy_channel.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/memory_monitor.hpp"
#include "tandem/runtime/policy_gate.hpp"
#include "tandem/runtime/region_waiter.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/schedule/policy_capabilities.hpp"
#include "training_job.hpp"

namespace tandem::runtime::detail {

struct shared_device_options {
  /// The device and policy ([device] and [policy] of a workload; jobs are not read).
  const workload* spec = nullptr;
  policy_overrides overrides;
  /// Arrivals to expect, so that the gate tells a policy waiting for a later arrival from one
  /// that stalled; 0: unknown (jobs join as they come), never a stall for want of arrivals.
  std::size_t expected_jobs = 0;
  std::ostream* timeline = nullptr;
  bool record_allocations = false;
  const fault_plan* faults = nullptr;  ///< nullptr: none
};

/// Builds the device in the order its parts depend on each other and takes it down in reverse;
/// one per device kind and process at a time (it is libtorch's allocator: usage_error otherwise).
class shared_device {
 public:
  explicit shared_device(const shared_device_options& options);
  ~shared_device();
  shared_device(const shared_device&) = delete;
  shared_device& operator=(const shared_device&) = delete;

  [[nodiscard]] training_context& context() { return *context_; }
  [[nodiscard]] policy_gate& gate() { return *gate_; }
  [[nodiscard]] memory::device_pool& pool() { return *pool_; }
  [[nodiscard]] memory_monitor& monitor() { return *monitor_; }
  [[nodiscard]] std::size_t budget() const { return budget_; }

  /// The run's result from its jobs' (`ids`: each job's pool id, -1 for one that never
  /// arrived): the system's measures, the policy's statistics and the pool's warnings, with one
  /// more for memory the pool still holds when `all_left` says every job has left.
  [[nodiscard]] run_result finish(std::string source, std::vector<job_result> jobs,
                                  const std::vector<std::int64_t>& ids, bool all_left = true);
  /// Gives libtorch its own allocator back before the device is gone (tensors that outlive
  /// the device would otherwise be freed into it).
  void uninstall_allocator();

 private:
  /// Sets the pool's borrow gate for the device's life.
  class borrow_gate_installation {
   public:
    borrow_gate_installation(memory::device_pool& pool, memory::borrow_gate* gate);
    ~borrow_gate_installation();
    borrow_gate_installation(const borrow_gate_installation&) = delete;
    borrow_gate_installation& operator=(const borrow_gate_installation&) = delete;

   private:
    memory::device_pool& pool_;
  };

  fault_plan no_faults_;
  device_spec device_;
  std::size_t budget_ = 0;
  // What the pool reports (a refused free, tensors a job left behind) goes to the results as
  // well as to stderr. Declared before the pool, which may still report while it is destroyed.
  std::mutex warnings_mutex_;
  std::vector<std::string> warnings_;
  std::unique_ptr<device::backend> backend_;
  std::unique_ptr<memory::device_pool> pool_;
  std::chrono::steady_clock::time_point origin_;  ///< time zero of every report
  std::unique_ptr<schedule::policy> policy_;
  schedule::policy_capabilities capabilities_;
  std::unique_ptr<memory_monitor> monitor_;
  std::shared_ptr<void> allocator_;  ///< install_torch_allocator's
  std::unique_ptr<policy_gate> gate_;
  // Memory waits: an allocation the budget refuses waits for returns or a budget change instead
  // of failing, except under the baselines whose point is to fail (spatial, static). Unset
  // before the policy goes: the pool returns regions when it is destroyed.
  std::optional<region_waiter> waiter_;
  std::optional<borrow_gate_installation> borrow_gate_;
  std::unique_ptr<device::copy_channel> copies_;
  std::unique_ptr<joint_footprint> joint_;  ///< before context_, which points at it
  retired_streams retired_;
  std::unique_ptr<training_context> context_;
};

}  // namespace tandem::runtime::detail
