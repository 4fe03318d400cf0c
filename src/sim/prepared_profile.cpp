#include "prepared_profile.hpp"

#include <algorithm>
#include <cstdint>

namespace tandem::sim::detail {

prepared_profile::prepared_profile(const job_profile& p)
    : profile(&p), persistent(p.persistent_bytes()) {
  const double solo_s = p.solo_iteration_s();
  // Without per-operation traffic, every byte of the peak is assumed touched once an iteration.
  const double fallback_rate = solo_s > 0 ? static_cast<double>(p.peak_live_bytes) / solo_s : 0;
  double at = 0;
  double bytes = 0;
  double device = 0;
  const auto plain = [](const operation& op) {
    return op.host_s <= 0 && op.device_time() == op.solo_s;
  };
  for (std::size_t i = 0; i < p.operations.size(); ++i) {
    const auto& op = p.operations[i];
    at += op.solo_s;
    device += op.device_time();
    bytes +=
        op.bytes_touched > 0 ? static_cast<double>(op.bytes_touched) : fallback_rate * op.solo_s;
    const bool last = i + 1 == p.operations.size() || !plain(op) || !plain(p.operations[i + 1]) ||
                      p.operations[i + 1].fill != op.fill;
    if (!last) continue;
    const double start = segments.empty() ? 0 : segments.back().end;
    segments.push_back({start, at, op.fill, device > 0 ? bytes / device : 0});
    stages.push_back({op.host_s, device});
    bytes = 0;
    device = 0;
  }
  std::int64_t live = 0;
  for (const auto& step : p.steps) {
    live += step.bytes;
    live_after.push_back(static_cast<std::size_t>(std::max<std::int64_t>(live, 0)));
  }
  // Region moves happen at the time of the allocation or free that causes them.
  std::size_t held_step = 0;
  auto held = static_cast<std::int64_t>(p.held.held_at_start);
  for (const auto& step : p.steps) {
    while (held_step < p.held.steps.size() && p.held.steps[held_step].at_s <= step.at_s)
      held += p.held.steps[held_step++].delta;
    memory.push_back({step.bytes, static_cast<std::size_t>(std::max<std::int64_t>(held, 0))});
    if (step.bytes > 0) allocation_at.push_back(step.at_s);
  }
}

namespace {

std::size_t live_after_steps(const prepared_profile& prepared, std::size_t count) {
  return prepared.persistent + (count == 0 ? 0 : prepared.live_after[count - 1]);
}

}  // namespace

std::size_t prepared_profile::live_at(double position) const {
  const auto& steps = profile->steps;
  const auto after = std::upper_bound(steps.begin(), steps.end(), position,
                                      [](double at, const memory_step& s) { return at < s.at_s; });
  return live_after_steps(*this, static_cast<std::size_t>(after - steps.begin()));
}

std::size_t prepared_profile::live_before(double position) const {
  const auto& steps = profile->steps;
  const auto at = std::lower_bound(steps.begin(), steps.end(), position,
                                   [](const memory_step& s, double t) { return s.at_s < t; });
  return live_after_steps(*this, static_cast<std::size_t>(at - steps.begin()));
}

}  // namespace tandem::sim::detail
