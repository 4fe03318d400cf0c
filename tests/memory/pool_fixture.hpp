#pragma once
// Shared set-up for pool tests: a CPU backend, a small pool of 2 MiB regions, and a gate that
// holds a stream's work back so that tests can see what happens while the device is busy.

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/device_pool.hpp"

namespace tandem::memory::testing {

inline pool_options small_pool(std::size_t capacity = 64 * MiB, std::size_t budget = 0) {
  pool_options options;
  options.capacity = capacity;
  options.budget = budget;
  options.region_size = 2 * MiB;
  options.small_threshold = 256 * KiB;
  options.event_granularity = 4 * MiB;
  return options;
}

/// Blocks a stream until open() is called: the stream's later work stays pending.
class gate {
 public:
  void close_on(device::stream& stream) {
    auto flag = open_;
    stream.launch_host([flag] {
      while (!flag->load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
  }
  void open() { open_->store(true); }
  ~gate() { open(); }

 private:
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(false);
};

inline std::size_t region_of(const device_pool& pool, const void* ptr) {
  return static_cast<std::size_t>(static_cast<const std::byte*>(ptr) - pool.base()) /
         pool.options().region_size;
}

}  // namespace tandem::memory::testing
