#pragma once
// Typed trace events of the pool: what later issues build timelines, profiles and tensor
// classification from. A sink is called under the job's lock, so it must be quick.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"

namespace tandem::memory {

using job_id = std::uint32_t;

enum class trace_op : std::uint8_t {
  alloc,          ///< bytes handed to the job
  free,           ///< bytes returned by the job (the device may still use them)
  region_borrow,  ///< regions moved from the sharable area to the job
  region_return,  ///< regions moved back to the sharable area
  out_of_memory,  ///< a request refused
};

const char* to_string(trace_op op);

struct trace_event {
  std::int64_t time_ns = 0;  ///< since the pool was created (steady clock)
  trace_op op = trace_op::alloc;
  job_id job = 0;
  std::uint32_t stream = 0;  ///< device stream id
  alloc_kind kind = alloc_kind::unknown;
  std::size_t bytes = 0;   ///< rounded size (for regions: bytes of the regions)
  std::size_t offset = 0;  ///< from the pool's base
};

class trace_sink {
 public:
  virtual ~trace_sink() = default;
  /// Called for every event; may be called from several threads at once.
  virtual void on_event(const trace_event& event) = 0;
};

/// Keeps every event in memory. Thread-safe.
class trace_recorder final : public trace_sink {
 public:
  void on_event(const trace_event& event) override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
  }
  [[nodiscard]] std::vector<trace_event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    events_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<trace_event> events_;  // guarded by mutex_
};

}  // namespace tandem::memory
