#include "tandem/memory/region_pool.hpp"

#include <algorithm>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::memory {

region_pool::region_pool(std::size_t region_count, std::size_t region_size, std::size_t budget)
    : region_count_(region_count),
      region_size_(region_size),
      owners_(std::make_unique<std::atomic<job_id>[]>(region_count)),
      budget_(budget) {
  TANDEM_EXPECTS(region_count > 0, usage_error, "a region pool needs at least one region");
  TANDEM_EXPECTS(budget <= capacity(), usage_error,
                 "the budget (" + format_bytes(budget) + ") exceeds the capacity (" +
                     format_bytes(capacity()) + ")");
  for (std::size_t i = 0; i < region_count; ++i)
    owners_[i].store(no_job, std::memory_order_relaxed);
  insert_run(0, region_count);
}

void region_pool::insert_run(std::size_t first, std::size_t count) {
  runs_by_address_.emplace(first, count);
  runs_by_size_.emplace(count, first);
  free_count_ += count;
}

void region_pool::erase_run(std::map<std::size_t, std::size_t>::iterator run) {
  runs_by_size_.erase({run->second, run->first});
  free_count_ -= run->second;
  runs_by_address_.erase(run);
}

std::optional<region_span> region_pool::borrow(job_id owner, std::size_t count) {
  TANDEM_ASSERT(count > 0, "borrowing zero regions");
  std::lock_guard lock(mutex_);
  if (reserved_ + count * region_size_ > budget_) return std::nullopt;
  auto fit = runs_by_size_.lower_bound({count, 0});
  if (fit == runs_by_size_.end()) return std::nullopt;
  const auto [run_count, run_first] = *fit;
  erase_run(runs_by_address_.find(run_first));
  if (run_count > count) insert_run(run_first + count, run_count - count);
  reserved_ += count * region_size_;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  for (std::size_t i = run_first; i < run_first + count; ++i) {
    owners_[i].store(owner, std::memory_order_release);
  }
  return region_span{run_first, count};
}

void region_pool::give_back(region_span span) {
  TANDEM_ASSERT(span.count > 0 && span.first + span.count <= region_count_,
                "returning a span outside the pool");
  std::lock_guard lock(mutex_);
  for (std::size_t i = span.first; i < span.first + span.count; ++i) {
    TANDEM_ASSERT(owners_[i].load(std::memory_order_relaxed) != no_job,
                  "returning a region that is already free");
    owners_[i].store(no_job, std::memory_order_release);
  }
  reserved_ -= span.count * region_size_;
  std::size_t first = span.first;
  std::size_t count = span.count;
  // Coalesce with the free runs on either side so that multi-region requests can be met.
  auto next = runs_by_address_.lower_bound(first);
  if (next != runs_by_address_.end() && next->first == first + count) {
    count += next->second;
    erase_run(next);
  }
  auto after = runs_by_address_.lower_bound(first);
  if (after != runs_by_address_.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == first) {
      first = prev->first;
      count += prev->second;
      erase_run(prev);
    }
  }
  insert_run(first, count);
}

void region_pool::set_budget(std::size_t bytes) {
  TANDEM_EXPECTS(bytes <= capacity(), usage_error,
                 "cannot set the budget to " + format_bytes(bytes) + ": the pool's capacity is " +
                     format_bytes(capacity()) + "; choose a budget at most the capacity");
  std::lock_guard lock(mutex_);
  budget_ = bytes;
}

std::size_t region_pool::budget() const {
  std::lock_guard lock(mutex_);
  return budget_;
}

std::size_t region_pool::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

std::size_t region_pool::peak_reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_reserved_;
}

std::size_t region_pool::free_regions() const {
  std::lock_guard lock(mutex_);
  return free_count_;
}

std::size_t region_pool::largest_free_run() const {
  std::lock_guard lock(mutex_);
  return runs_by_size_.empty() ? 0 : runs_by_size_.rbegin()->first;
}

}  // namespace tandem::memory
