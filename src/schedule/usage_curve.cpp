#include "tandem/schedule/usage_curve.hpp"

#include <algorithm>
#include <limits>
#include <utility>

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

void segments_of(const usage_curve& c, curve_segments& out) {
  out.offset.clear();
  out.held.clear();
  auto held = static_cast<std::int64_t>(c.held_at_start);
  out.offset.push_back(0);
  out.held.push_back(held);
  for (const auto& step : c.steps) {
    held += step.delta;
    // The first segment is what is held already: a later step at time 0 starts a new one.
    if (out.offset.size() == 1 || step.at_s > out.offset.back()) {
      out.offset.push_back(step.at_s);
      out.held.push_back(held);
    } else {
      out.held.back() = held;
    }
  }
  out.offset.push_back(std::numeric_limits<double>::infinity());
  out.rises.clear();
  std::int64_t most = out.held[0];
  for (std::size_t j = 1; j < out.held.size(); ++j) {
    if (out.held[j] <= most) continue;
    most = out.held[j];
    out.rises.push_back({out.offset[j], most});
  }
}

indexed_curve::indexed_curve(usage_curve c) : curve(std::move(c)) {
  segments_of(curve, segments);
  const auto n = curve.steps.size();
  held_after.resize(n);
  most_from.resize(n);
  std::size_t held = curve.held_at_start;
  for (std::size_t i = 0; i < n; ++i) {
    held = apply(held, curve.steps[i].delta);
    held_after[i] = held;
  }
  for (std::size_t i = n; i-- > 0;) {
    most_from[i] = i + 1 < n ? std::max(held_after[i], most_from[i + 1]) : held_after[i];
  }
  peak = std::max(curve.held_at_start, n > 0 ? most_from[0] : 0);
  while (peak_step < n && held_after[peak_step] < peak) ++peak_step;
  std::size_t smallest_rise = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto rise = static_cast<std::size_t>(std::max<std::int64_t>(curve.steps[i].delta, 0));
    if (rise == 0) continue;
    if (smallest_rise == 0 || rise < smallest_rise) smallest_rise = rise;
    returns_from = i + 1;
  }
  margin_unit = std::min(smallest_rise, (peak - std::min(peak, curve.held_at_start)) / 4);
  std::size_t lowest = peak;
  for (std::size_t i = peak_step; i < n; ++i) {
    lowest = std::min(lowest, held_after[i]);
    post_peak_rise = std::max(post_peak_rise, held_after[i] - lowest);
  }
}

std::size_t indexed_curve::most_held_past_peak_from(std::size_t held) const {
  for (std::size_t i = peak_step; i < held_after.size(); ++i) {
    if (held_after[i] <= held) return most_from[i];
  }
  return held_after.empty() ? curve.held_at_start : held_after.back();
}

std::size_t indexed_curve::steps_done(double offset_s) const {
  const auto first = std::upper_bound(curve.steps.begin(), curve.steps.end(), offset_s,
                                      [](double t, const usage_step& s) { return t < s.at_s; });
  return static_cast<std::size_t>(first - curve.steps.begin());
}

std::size_t indexed_curve::most_held_after_steps(std::size_t done) const {
  // What is held now, and the most after any step still to come.
  const auto now = held_after_steps(done);
  return done < most_from.size() ? std::max(now, most_from[done]) : now;
}

std::size_t indexed_curve::most_held_from(double offset_s) const {
  return most_held_after_steps(steps_done(offset_s));
}

}  // namespace tandem::schedule
