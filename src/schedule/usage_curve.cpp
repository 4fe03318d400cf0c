#include "tandem/schedule/usage_curve.hpp"

#include <algorithm>

namespace tandem::schedule {

namespace {

std::size_t apply(std::size_t held, std::int64_t delta) {
  if (delta >= 0) return held + static_cast<std::size_t>(delta);
  const auto returned = static_cast<std::size_t>(-delta);
  return held > returned ? held - returned : 0;
}

}  // namespace

std::size_t usage_curve::held_at(double offset_s) const {
  std::size_t held = held_at_start;
  for (const auto& step : steps) {
    if (step.at_s > offset_s) break;
    held = apply(held, step.delta);
  }
  return held;
}

std::size_t usage_curve::peak() const {
  std::size_t held = held_at_start;
  std::size_t most = held;
  for (const auto& step : steps) {
    held = apply(held, step.delta);
    most = std::max(most, held);
  }
  return most;
}

std::size_t usage_curve::held_at_end() const {
  std::size_t held = held_at_start;
  for (const auto& step : steps) held = apply(held, step.delta);
  return held;
}

}  // namespace tandem::schedule
