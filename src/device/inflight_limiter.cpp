#include "tandem/device/inflight_limiter.hpp"

#include <string>
#include <utility>

#include "tandem/common/error.hpp"

namespace tandem::device {

inflight_limiter::inflight_limiter(std::size_t limit) : limit_(limit) {
  TANDEM_EXPECTS(limit >= 1, usage_error,
                 "the in-flight limit must be at least 1 operation, got " + std::to_string(limit) +
                     "; use no limiter to leave a stream unlimited");
}

bool inflight_limiter::mark(stream& queue) {
  event_ptr done = queue.record();
  std::unique_lock lock(mutex_);
  while (!marks_.empty() && marks_.front()->query()) marks_.pop_front();
  marks_.push_back(std::move(done));
  if (marks_.size() <= limit_) return false;
  ++waits_;
  // Wait without the lock: another thread may mark meanwhile; the oldest is ours to drop.
  const event_ptr oldest = marks_.front();
  lock.unlock();
  oldest->synchronize();
  lock.lock();
  while (!marks_.empty() && marks_.front()->query()) marks_.pop_front();
  return true;
}

std::size_t inflight_limiter::pending() const {
  std::lock_guard lock(mutex_);
  return marks_.size();
}

std::int64_t inflight_limiter::waits() const {
  std::lock_guard lock(mutex_);
  return waits_;
}

}  // namespace tandem::device
