#pragma once
// The sharable area: the pool's regions, which jobs borrow into their local areas and return
// when empty (Zico §4, §6.3). Knows nothing of blocks or streams; enforces the budget.
//
// Budget rule: the bytes of borrowed regions never exceed the budget. Lowering the budget below
// what is borrowed refuses new borrows until enough regions come back; nothing is taken away.
//
// Thread safety: all members may be called concurrently; owner() reads without locking.

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "tandem/memory/trace.hpp"

namespace tandem::memory {

inline constexpr job_id no_job = ~job_id{0};

/// A contiguous run of regions, by index.
struct region_span {
  std::size_t first = 0;
  std::size_t count = 0;
};

class region_pool {
 public:
  /// `region_count` regions of `region_size` bytes; `budget` in bytes (≤ their total).
  region_pool(std::size_t region_count, std::size_t region_size, std::size_t budget);

  /// Borrows `count` contiguous regions for `owner`: best fit among the free runs, lowest address
  /// on ties. Empty when the budget or the free runs cannot supply them.
  [[nodiscard]] std::optional<region_span> borrow(job_id owner, std::size_t count);

  /// Returns a span borrowed earlier. The caller guarantees the device has finished with it.
  void give_back(region_span span);

  /// Throws usage_error when `bytes` exceeds the capacity.
  void set_budget(std::size_t bytes);

  [[nodiscard]] job_id owner(std::size_t region) const {
    return owners_[region].load(std::memory_order_acquire);
  }
  [[nodiscard]] std::size_t region_size() const { return region_size_; }
  [[nodiscard]] std::size_t region_count() const { return region_count_; }
  [[nodiscard]] std::size_t capacity() const { return region_count_ * region_size_; }
  [[nodiscard]] std::size_t budget() const;
  [[nodiscard]] std::size_t reserved_bytes() const;
  [[nodiscard]] std::size_t peak_reserved_bytes() const;
  [[nodiscard]] std::size_t free_regions() const;
  /// Regions in the longest contiguous free run (what the largest multi-region request can get).
  [[nodiscard]] std::size_t largest_free_run() const;

 private:
  void insert_run(std::size_t first, std::size_t count);             // requires mutex_
  void erase_run(std::map<std::size_t, std::size_t>::iterator run);  // requires mutex_

  const std::size_t region_count_;
  const std::size_t region_size_;
  std::unique_ptr<std::atomic<job_id>[]> owners_;  // no_job when free

  mutable std::mutex mutex_;
  std::size_t budget_;                                          // guarded by mutex_
  std::size_t reserved_ = 0;                                    // guarded by mutex_
  std::size_t peak_reserved_ = 0;                               // guarded by mutex_
  std::size_t free_count_ = 0;                                  // guarded by mutex_
  std::map<std::size_t, std::size_t> runs_by_address_;          // first -> count; guarded by mutex_
  std::set<std::pair<std::size_t, std::size_t>> runs_by_size_;  // (count, first); guarded
};

}  // namespace tandem::memory
