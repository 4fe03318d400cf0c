#pragma once
// An optional way for a job to make room in its own memory when an allocation of its finds
// none (set with device_pool::set_pressure_relief): Capuchin's passive mode, where a job whose
// access pattern is not known yet swaps its own tensors out on demand instead of failing or
// waiting for others (torch/passive_swapper.hpp).
//
// The pool asks after its own search and reclaim failed, before the borrow gate's wait, on the
// allocating thread and with no pool lock held, so relieve may free the job's blocks (its frees
// come back into the pool as usual). It must not allocate from the same job on that path unless
// it can bear a nested refusal (the nested allocation asks relieve again).

#include <cstddef>

#include "tandem/memory/trace.hpp"

namespace tandem::memory {

class pressure_relief {
 public:
  virtual ~pressure_relief() = default;
  /// `job` found no memory for `bytes`: frees some of its memory and returns true to have the
  /// allocation tried again, or returns false when it has nothing (more) to give up.
  [[nodiscard]] virtual bool relieve(job_id job, std::size_t bytes) = 0;
};

}  // namespace tandem::memory
