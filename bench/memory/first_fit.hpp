#pragma once
// The naive baseline: first fit over one contiguous buffer of the pools' virtual size, with an
// address-ordered free list, splitting and coalescing. No streams, jobs or budgets: it shows
// what the bookkeeping of a single-threaded carve-up costs on the same workloads.

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

namespace tandem::bench {

class first_fit {
 public:
  static constexpr std::size_t granularity = 512;

  /// Maps `bytes` of address space (MAP_NORESERVE, never touched).
  explicit first_fit(std::size_t bytes);
  ~first_fit();
  first_fit(const first_fit&) = delete;
  first_fit& operator=(const first_fit&) = delete;

  /// Throws std::bad_alloc when no free run is large enough.
  [[nodiscard]] void* allocate(std::size_t bytes);
  /// Throws std::invalid_argument when `ptr` is not a live allocation.
  void deallocate(void* ptr);

  /// The highest end offset used since the last reset: what the allocator had to take.
  [[nodiscard]] std::size_t high_water() const;
  /// Restarts the high-water mark from what is live now.
  void reset_high_water();

 private:
  void check() const;  // walks the lists (debug builds only); requires mutex_

  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_;            // offset -> size, coalesced; mutex_
  std::unordered_map<std::size_t, std::size_t> live_;  // offset -> rounded size; mutex_
  std::size_t high_water_ = 0;                         // mutex_
};

}  // namespace tandem::bench
