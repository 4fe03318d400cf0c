#pragma once
// An optional way for a job to make room in its own memory when an allocation of its finds
// none (set with device_pool::set_pressure_relief): Capuchin's passive mode, where a job whose
// access pattern is not known yet swaps its own tensors out on demand instead of failing or
// waiting for others (torch/passive_swapper.hpp), and a plan executor's last resort, where a
// planned job swaps a tensor of its plan out of turn rather than fail (torch/plan_executor.hpp).
//
// The pool asks twice (relief_moment): after its own search and reclaim failed, before the
// borrow gate's wait; and where the wait would end the allocation instead (the gate answers
// make_room, or there is no gate), before it fails. Always on the allocating thread and with
// no pool lock held, so relieve may free the job's blocks (its frees come back into the pool
// as usual). It must not allocate from the same job on that path unless it can bear a nested
// refusal (the nested allocation asks relieve again).

#include <cstddef>

#include "tandem/memory/trace.hpp"

namespace tandem::memory {

/// When the pool asks a relief.
enum class relief_moment {
  before_waiting,      ///< no memory in the job's regions nor the budget: nothing waited yet
  instead_of_failing,  ///< no wait will bring memory: the allocation fails unless room is made
};

class pressure_relief {
 public:
  virtual ~pressure_relief() = default;
  /// `job` found no memory for `bytes` at `moment`: frees some of its memory and returns true
  /// to have the allocation tried again, or returns false when it has nothing (more) to give
  /// up at that moment.
  [[nodiscard]] virtual bool relieve(job_id job, std::size_t bytes, relief_moment moment) = 0;
};

}  // namespace tandem::memory
