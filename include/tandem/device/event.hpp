#pragma once
// A completion marker recorded on a stream (CUDA's cudaEvent_t, or its CPU stand-in).

#include <memory>

namespace tandem::device {

/// Completes when its stream has executed everything enqueued on it before the record.
/// Thread safety: query() and synchronize() may be called from any thread.
class event {
 public:
  virtual ~event() = default;

  /// True once the recorded point has been reached. Never blocks; cheap enough to poll.
  [[nodiscard]] virtual bool query() const = 0;

  /// Blocks the calling host thread until query() would return true.
  virtual void synchronize() const = 0;
};

using event_ptr = std::shared_ptr<const event>;

}  // namespace tandem::device
