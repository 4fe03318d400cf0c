#pragma once
// An allocation_hook adaptor that fails a job (or restarts its iteration) at a planned
// allocation, then defers to the hook it wraps (the job's NodeGroup gate). Only the isolation tests
// plan faults; without one the job binds the wrapped hook directly and pays nothing.

#include <cstddef>
#include <optional>
#include <string>

#include "tandem/runtime/fault_injection.hpp"
#include "tandem/runtime/policy_gate.hpp"
#include "tandem/torch/job_binding.hpp"

namespace tandem::runtime::detail {

class fault_hook final : public torch_support::allocation_hook {
 public:
  /// `gate`: where a planned restart is owed (policy_gate::inject_restart) for `job`.
  fault_hook(torch_support::allocation_hook& inner, injected_fault fault, policy_gate& gate,
             memory::job_id job);
  void before_allocation(std::size_t bytes) override;
  void allocation_refused() noexcept override;

 private:
  torch_support::allocation_hook& inner_;
  injected_fault fault_;
  policy_gate& gate_;
  memory::job_id job_;
  std::size_t allocations_ = 0;
  bool struck_ = false;
};

}  // namespace tandem::runtime::detail
