#include "tandem/memory/tensor_classifier.hpp"

#include <algorithm>
#include <limits>

#include "tandem/common/error.hpp"

namespace tandem::memory {

namespace {

constexpr std::size_t not_freed = std::numeric_limits<std::size_t>::max();

}  // namespace

void tensor_classifier::begin_iteration() {
  in_iteration_ = true;
  position_ = 0;
  recording_ = learning();
  events_.clear();
  live_.clear();
}

void tensor_classifier::end_iteration() {
  TANDEM_EXPECTS(in_iteration_, usage_error,
                 "tensor_classifier::end_iteration without begin_iteration; bracket each "
                 "iteration with both");
  in_iteration_ = false;
  if (recording_) learn();
  recording_ = false;
  events_.clear();
  live_.clear();
}

alloc_kind tensor_classifier::classify(std::size_t bytes, alloc_kind fallback) const noexcept {
  // Matching the size too catches most drift: an iteration that allocates differently (another
  // batch shape, a branch taken) mostly puts other sizes at the same positions.
  if (!in_iteration_ || !learned_ || position_ >= table_.size()) return fallback;
  const auto& entry = table_[position_];
  return entry.bytes == bytes ? entry.kind : fallback;
}

void tensor_classifier::on_allocate(const void* ptr, std::size_t bytes) noexcept {
  if (!in_iteration_ || ptr == nullptr || bytes == 0) return;
  if (learned_) {
    const bool matched = position_ < table_.size() && table_[position_].bytes == bytes;
    ++(matched ? answers_.learned : answers_.fallback);
  }
  // After a mismatch the position keeps counting: a drift that only swaps sizes realigns.
  const auto position = position_++;
  if (!recording_) return;
  try {
    events_.push_back({false, position, bytes});
    live_[ptr] = position;
  } catch (...) {
    // Out of host memory: give up learning this iteration rather than fail the allocation.
    recording_ = false;
  }
}

void tensor_classifier::on_free(const void* ptr) noexcept {
  if (!recording_) return;
  const auto found = live_.find(ptr);
  if (found == live_.end()) return;  // made before the iteration: not learned from
  try {
    events_.push_back({true, found->second, 0});
  } catch (...) {
    recording_ = false;
  }
  live_.erase(found);
}

void tensor_classifier::learn() {
  table_ = classify_trace(events_, &profile_);
  learned_ = true;
  learning_requested_ = false;
  answers_ = {};
}

std::vector<learned_allocation> tensor_classifier::classify_trace(
    const std::vector<trace_step>& events, learned_profile* profile) {
  // First pass: sizes, when each allocation was freed (counted in allocations made by then) and
  // the peak of live bytes.
  std::vector<learned_allocation> table;
  std::vector<std::size_t> freed_at;
  std::size_t live = 0;
  std::size_t peak = 0;
  std::size_t peak_position = 0;
  for (const auto& event : events) {
    if (event.is_free) {
      TANDEM_EXPECTS(event.position < table.size() && freed_at[event.position] == not_freed,
                     usage_error, "a trace frees an allocation it did not make, or twice");
      freed_at[event.position] = table.size();
      live -= table[event.position].bytes;
      continue;
    }
    TANDEM_EXPECTS(event.bytes > 0, usage_error, "a trace allocates 0 bytes");
    table.push_back({event.bytes, alloc_kind::unknown});
    freed_at.push_back(not_freed);
    live += event.bytes;
    if (live > peak) {  // the first time the maximum is reached
      peak = live;
      peak_position = table.size() - 1;
    }
  }

  // At least one: an allocation freed before the next one is made is always short-lived.
  const auto short_lived = std::max<std::size_t>(
      1, static_cast<std::size_t>(short_lived_fraction * static_cast<double>(table.size())));
  learned_profile summary;
  summary.iteration_allocations = table.size();
  summary.peak_position = peak_position;
  summary.peak_live_bytes = peak;
  for (std::size_t position = 0; position < table.size(); ++position) {
    auto& entry = table[position];
    const auto freed = freed_at[position];
    if (freed == not_freed) {
      entry.kind = alloc_kind::persistent;
    } else if (position <= peak_position && freed > peak_position) {
      // Live at the peak (freed after the peak's allocation was made), however briefly.
      entry.kind = alloc_kind::feature_map;
    } else if (freed <= peak_position || freed - position - 1 < short_lived) {
      // Freed before the peak, or few allocations (freed - position - 1) made while it lived.
      entry.kind = alloc_kind::temporary;
    } else {
      entry.kind = alloc_kind::gradient;
    }
    ++summary.allocations[index_of(entry.kind)];
    summary.bytes[index_of(entry.kind)] += entry.bytes;
  }
  if (profile != nullptr) *profile = summary;
  return table;
}

}  // namespace tandem::memory
