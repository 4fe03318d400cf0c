#include "fault_hook.hpp"

#include <stdexcept>

#include "tandem/memory/out_of_memory.hpp"
#include "tandem/runtime/restartable_scope.hpp"

namespace tandem::runtime::detail {

fault_hook::fault_hook(torch_support::allocation_hook& inner, injected_fault fault,
                       policy_gate& gate, memory::job_id job)
    : inner_(inner), fault_(std::move(fault)), gate_(gate), job_(job) {}

void fault_hook::before_allocation(std::size_t bytes) {
  // The pool makes nothing for an empty tensor: it is not an allocation to fail.
  if (bytes == 0) {
    inner_.before_allocation(bytes);
    return;
  }
  const auto ordinal = allocations_++;
  if (fault_.what == injected_fault::kind::restart) {
    if (!struck_ && ordinal >= fault_.allocation && may_restart_here()) {
      struck_ = true;
      gate_.inject_restart(job_);
      throw iteration_restarted("injected restart at allocation " + std::to_string(ordinal));
    }
  } else if (ordinal == fault_.allocation) {
    const std::string where = "injected fault at allocation " + std::to_string(fault_.allocation);
    if (fault_.what == injected_fault::kind::error) {
      throw std::runtime_error("job '" + fault_.job + "': " + where);
    }
    memory::oom_report report;
    report.job_name = fault_.job;
    report.requested_bytes = bytes;
    report.cause = where;
    throw memory::out_of_memory_error(report);
  }
  try {
    inner_.before_allocation(bytes);
  } catch (...) {
    --allocations_;  // put off before the pool saw it
    throw;
  }
}

void fault_hook::allocation_refused() noexcept {
  // Ordinals count allocations that happened: the next one takes this one's place.
  if (allocations_ > 0) --allocations_;
  inner_.allocation_refused();
}

}  // namespace tandem::runtime::detail
