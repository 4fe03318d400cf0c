#pragma once
// Dense stream ids for a backend: the lowest free id is reused, so allocators can index by id.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tandem/common/error.hpp"

namespace tandem::device::detail {

/// Thread-safe.
class stream_ids {
 public:
  std::uint32_t take() {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < in_use_.size(); ++i) {
      if (!in_use_[i]) {
        in_use_[i] = true;
        return static_cast<std::uint32_t>(i);
      }
    }
    in_use_.push_back(true);
    return static_cast<std::uint32_t>(in_use_.size() - 1);
  }
  void give_back(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    TANDEM_ASSERT(id < in_use_.size() && in_use_[id], "returning a stream id that is not in use");
    in_use_[id] = false;
  }

 private:
  std::mutex mutex_;
  std::vector<bool> in_use_;  // guarded by mutex_
};

}  // namespace tandem::device::detail
