#pragma once
// Zico's in-flight limit (§6.1): a job's host thread may run only so far ahead of its stream.
// Allocation happens when an operation is enqueued, execution later; with a deep queue the memory
// of operations that have not run yet is already taken, and a scheduler that predicts usage from
// allocations sees the job far ahead of what the device does. Marking the stream at each
// allocating operation and waiting while more than `limit` marks are pending keeps allocation
// within `limit` operations of execution.
//
// Thread safety: mark() and the accessors may be called from several threads (a job's thread in
// the forward pass, libtorch's autograd thread in the backward); one mutex guards the queue.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "tandem/device/stream.hpp"

namespace tandem::device {

class inflight_limiter {
 public:
  /// `limit`: marks that may be pending at once, at least 1 (usage_error otherwise).
  explicit inflight_limiter(std::size_t limit);

  /// Records a mark at the current end of `queue`, then, while more than `limit` marks are
  /// pending, blocks until the oldest completes. Returns whether it had to wait.
  bool mark(stream& queue);

  [[nodiscard]] std::size_t limit() const { return limit_; }
  /// Marks recorded and not yet seen complete (completed ones are dropped lazily, at mark()).
  [[nodiscard]] std::size_t pending() const;
  /// Times mark() had to wait for the device.
  [[nodiscard]] std::int64_t waits() const;

 private:
  std::size_t limit_;
  mutable std::mutex mutex_;
  std::deque<event_ptr> marks_;
  std::int64_t waits_ = 0;
};

}  // namespace tandem::device
