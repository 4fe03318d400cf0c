#pragma once
// The copy engine of one device as the jobs on it share it: a single copy stream that carries
// every job's swaps in the order they were issued, as the cost model's one copy channel does
// (cost_model.hpp). A stream takes work from one thread at a time; the channel lets every job
// thread issue copies.

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "tandem/device/backend.hpp"
#include "tandem/device/event.hpp"
#include "tandem/device/host_buffer_cache.hpp"
#include "tandem/device/stream.hpp"

namespace tandem::device {

class copy_channel {
 public:
  explicit copy_channel(backend& device, std::string name = "copy engine");

  /// Queues a copy of `bytes` from `src` to `dst` behind every copy issued before it, from any
  /// thread; the event completes when it has been carried out.
  [[nodiscard]] event_ptr copy(void* dst, const void* src, std::size_t bytes);

  /// Host memory the channel can copy to and from, outside every budget: a buffer of this size
  /// given back earlier when there is one (host_buffer_cache.hpp), since the same tensors go
  /// out every iteration.
  [[nodiscard]] std::unique_ptr<host_buffer> host_memory(std::size_t bytes);
  [[nodiscard]] host_buffer_cache::stats host_memory_statistics() const;

  /// Bytes carried or queued since the channel was made.
  [[nodiscard]] std::size_t bytes_issued() const;

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<stream> stream_;
  std::size_t bytes_issued_ = 0;
  host_buffer_cache host_buffers_;
};

}  // namespace tandem::device
