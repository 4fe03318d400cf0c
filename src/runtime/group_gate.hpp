#pragma once
// Waits at the policy's group boundaries (Waterwave's NodeGroup) on a job's own thread.

#include <cstddef>
#include <vector>

#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/policy_gate.hpp"
#include "tandem/torch/job_binding.hpp"

namespace tandem::runtime::detail {

/// Counts the job thread's allocations from the iteration's start and, at the allocation that
/// opens a group, makes the memory the job freed usable by others (the pool's SyncAndCoalesce),
/// then waits until the policy lets the job into that group. The wait happens on the job's own
/// thread, inside the allocation that would take the group's memory: on the CPU backend autograd
/// runs there too, so the backward pass is gated the same way; no thread other jobs need is ever
/// blocked.
class group_gate final : public torch_support::allocation_hook {
 public:
  group_gate(policy_gate& gate, memory::device_pool& pool, memory::job_id job)
      : gate_(gate), pool_(pool), job_(job) {}

  void begin_iteration();
  /// Ends the iteration's gating; returns whether it had groups.
  bool end_iteration();
  [[nodiscard]] double waited_s() const { return waited_s_; }

  /// At a group boundary, waits for the group's grant; an allocation that may be put off
  /// (memory::no_wait_scope: a plan's prefetch) does not wait there but fails at once, so that
  /// the job's own next allocation takes the boundary.
  void before_allocation(std::size_t bytes) override;
  void allocation_refused() noexcept override;

 private:
  policy_gate& gate_;
  memory::device_pool& pool_;
  memory::job_id job_;
  std::vector<std::size_t> boundaries_;
  std::size_t allocations_ = 0;
  std::size_t next_ = 0;
  bool active_ = false;
  double waited_s_ = 0;
};

}  // namespace tandem::runtime::detail
