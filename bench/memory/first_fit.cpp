#include "first_fit.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <iterator>
#include <new>
#include <stdexcept>

#include "tandem/common/units.hpp"

namespace tandem::bench {

first_fit::first_fit(std::size_t bytes) : size_(bytes / granularity * granularity) {
  void* memory = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) throw std::runtime_error("first_fit: mmap failed");
  base_ = static_cast<std::byte*>(memory);
  free_.emplace(0, size_);
}

first_fit::~first_fit() {
  ::munmap(base_, size_);
}

void* first_fit::allocate(std::size_t bytes) {
  const std::size_t rounded = align_up(std::max<std::size_t>(bytes, 1), granularity);
  std::lock_guard lock(mutex_);
  // First fit: the lowest-addressed run that is large enough.
  const auto run = std::find_if(free_.begin(), free_.end(),
                                [&](const auto& entry) { return entry.second >= rounded; });
  if (run == free_.end()) throw std::bad_alloc();
  const auto [offset, size] = *run;
  const auto hint = free_.erase(run);
  if (size > rounded) free_.emplace_hint(hint, offset + rounded, size - rounded);
  live_.emplace(offset, rounded);
  high_water_ = std::max(high_water_, offset + rounded);
  check();
  return base_ + offset;
}

void first_fit::deallocate(void* ptr) {
  auto offset = static_cast<std::size_t>(static_cast<std::byte*>(ptr) - base_);
  std::lock_guard lock(mutex_);
  const auto found = live_.find(offset);
  if (found == live_.end())
    throw std::invalid_argument("first_fit: freeing memory that is not live");
  std::size_t size = found->second;
  live_.erase(found);
  // Coalesce with the free neighbours on both sides so that the list stays minimal.
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace_hint(next, offset, size);
  check();
}

std::size_t first_fit::high_water() const {
  std::lock_guard lock(mutex_);
  return high_water_;
}

void first_fit::reset_high_water() {
  std::lock_guard lock(mutex_);
  high_water_ = 0;
  for (const auto& [offset, size] : live_) high_water_ = std::max(high_water_, offset + size);
}

void first_fit::check() const {
#if !defined(NDEBUG)
  // Free runs are ordered, aligned, disjoint and never adjacent (fully coalesced); with the live
  // blocks they tile the buffer exactly.
  std::size_t end = 0;
  bool first = true;
  std::size_t free_bytes = 0;
  for (const auto& [offset, size] : free_) {
    assert(size > 0 && offset % granularity == 0 && size % granularity == 0);
    assert(first || offset > end);  // '>' not '>=': adjacent runs would mean a missed merge
    end = offset + size;
    first = false;
    free_bytes += size;
  }
  assert(end <= size_);
  std::size_t live_bytes = 0;
  for (const auto& [offset, size] : live_) {
    const auto after = free_.upper_bound(offset);
    assert(after == free_.end() || offset + size <= after->first);
    assert(after == free_.begin() || std::prev(after)->first + std::prev(after)->second <= offset);
    live_bytes += size;
  }
  assert(free_bytes + live_bytes == size_);
#endif
}

}  // namespace tandem::bench
