#pragma once
// An optional judge of every region borrow (set with device_pool::set_borrow_gate): a policy
// that promises co-located iterations that each can finish (scrooge) must see, and may refuse,
// each borrow before the budget is the only check left. Knows nothing of blocks or streams.
//
// Protocol, per region borrow of a job: try_reserve before the regions are taken; cancel when
// the pool then could not supply them after all; returned for every span the job gives back.
// An allocation that found no memory asks wait_for_regions (outside every pool lock) whether to
// try again; it may block until that is worth doing, or tell the job to make room in its own
// memory (its pressure_relief) where no wait would serve. wait_ended closes such a wait.
//
// Thread safety: every member may be called from any thread at once; try_reserve, cancel and
// returned are called under the job's own lock and must not call back into the pool.

#include <cstddef>

#include "tandem/memory/trace.hpp"

namespace tandem::memory {

/// What a job that found no memory holds unused in its own regions.
struct own_room {
  std::size_t free_bytes = 0;       ///< in pieces too small for the request in its class
  bool another_class_fits = false;  ///< the pool serves it from another class if the wait fails
  bool can_make_room = false;       ///< it has a pressure_relief that may free its own memory
  bool caller_falls_back = false;   ///< its caller copes with a failure (fallback_scope.hpp)
};

/// What an allocation that found no memory does next.
enum class wait_answer {
  try_again,  ///< regions may have come back (after a wait)
  make_room,  ///< no wait will serve: ask the job's pressure_relief, then ask again
  fail,       ///< nothing will change: the allocation fails as out of memory
};

class borrow_gate {
 public:
  virtual ~borrow_gate() = default;
  /// `job` is about to borrow `bytes` of regions: true reserves them for it, false refuses.
  [[nodiscard]] virtual bool try_reserve(job_id job, std::size_t bytes) noexcept = 0;
  /// A reservation the pool could not turn into regions.
  virtual void cancel(job_id job, std::size_t bytes) noexcept = 0;
  /// `job` gave `bytes` of regions back.
  virtual void returned(job_id job, std::size_t bytes) noexcept = 0;
  /// `job` found no memory for `bytes`: blocks until trying again may succeed (try_again), or
  /// answers make_room (only when `room.can_make_room`) or fail at once. May throw to fail the
  /// allocation with its own error (a policy's restart of the iteration, which `room` tells
  /// whether a rerun could lay out afresh, or is not worth it).
  [[nodiscard]] virtual wait_answer wait_for_regions(job_id job, std::size_t bytes,
                                                     const own_room& room) = 0;
  /// The allocation that waited (wait_for_regions answered try_again at least once) is over,
  /// served or not: `job` waits for regions no more.
  virtual void wait_ended(job_id job) noexcept = 0;
};

}  // namespace tandem::memory
