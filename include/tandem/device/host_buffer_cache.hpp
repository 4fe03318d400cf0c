#pragma once
// Host buffers kept for reuse by a device's copy engine. Swapping moves the same tensors out and
// back every iteration, and a fresh host buffer costs far more than the copy into it: on the CPU
// backend large allocations are fresh mappings whose every page faults on first touch, and on
// CUDA pinning host memory (cudaMallocHost) costs milliseconds. A buffer given back is kept for a
// later request of the same size, as long as the buffers kept and in use together stay within
// the most that were ever in use at once, so the cache never holds more host memory than the
// swaps once needed.
//
// Thread-safe: buffers are taken on job threads and given back wherever the last owner of a
// swapped-out tensor drops it. A buffer may outlive the cache; it is then freed as it goes.

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "tandem/device/backend.hpp"

namespace tandem::device {

class host_buffer_cache {
 public:
  explicit host_buffer_cache(backend& device);
  ~host_buffer_cache();
  host_buffer_cache(const host_buffer_cache&) = delete;
  host_buffer_cache& operator=(const host_buffer_cache&) = delete;

  /// A buffer of at least `bytes`, kept from an earlier one of that size when there is one;
  /// destroying it gives it back. Throws what the backend's allocate_host throws.
  [[nodiscard]] std::unique_ptr<host_buffer> take(std::size_t bytes);

  struct stats {
    std::size_t taken = 0;         ///< buffers handed out
    std::size_t reused = 0;        ///< ...of them kept from earlier
    std::size_t kept_bytes = 0;    ///< idle now
    std::size_t in_use_bytes = 0;  ///< handed out and not given back
    std::size_t most_in_use_bytes = 0;
  };
  [[nodiscard]] stats statistics() const;

  struct shelf;  ///< what buffers given back find, alive as long as any of them

 private:
  backend& device_;
  std::shared_ptr<shelf> shelf_;
};

}  // namespace tandem::device
