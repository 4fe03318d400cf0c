#include "group_gate.hpp"

#include "tandem/memory/no_wait_scope.hpp"
#include "tandem/memory/out_of_memory.hpp"
#include "tandem/runtime/restartable_scope.hpp"

namespace tandem::runtime::detail {

void group_gate::begin_iteration() {
  boundaries_ = gate_.group_boundaries(job_);
  allocations_ = 0;
  next_ = 0;
  active_ = true;
}

bool group_gate::end_iteration() {
  active_ = false;
  return !boundaries_.empty();
}

void group_gate::before_allocation(std::size_t bytes) {
  // The pool makes nothing for an empty tensor, so the memory events the groups were cut from
  // do not count one either.
  if (!active_ || bytes == 0) return;
  if (next_ < boundaries_.size() && allocations_ == boundaries_[next_]) {
    if (memory::no_wait_scope::here()) {
      memory::oom_report report;
      report.job = job_;
      report.requested_bytes = bytes;
      report.cause = "put off: the job's next node group is not granted yet";
      report.put_off = true;
      throw memory::out_of_memory_error(report);
    }
    pool_.synchronize(job_);
    ++next_;
    waited_s_ += gate_.wait_for_group(job_, next_, runtime::may_restart_here());
  }
  ++allocations_;
}

void group_gate::allocation_refused() noexcept {
  if (active_ && allocations_ > 0) --allocations_;
}

}  // namespace tandem::runtime::detail
