#include "tandem/schedule/time_shift.hpp"

#include <algorithm>
#include <limits>

namespace tandem::schedule {

namespace {

// A candidate allocation is placed this long after the return it waits for, so that the
// merge orders the two without comparing equal floating-point times.
constexpr double after_release_s = 1e-9;

// Delays tried before the solver gives up and the job waits for the next event: bounds the
// rare worst case (no delay works while the others are mid-iteration: K x M candidates).
constexpr std::size_t max_delays_tried = 64;

std::int64_t as_signed(std::size_t bytes) {
  return static_cast<std::int64_t>(bytes);
}

/// The most `job` holds at any moment from now on, as the prediction sees it.
std::size_t most_held_from_now(const other_job& job, double now_s) {
  if (!job.running || job.curve == nullptr) return job.held_between;
  const double elapsed = now_s - job.started_s;
  const auto& curve = *job.curve;
  if (job.index != nullptr) {
    return elapsed >= curve.duration_s ? job.index->peak : job.index->most_held_from(elapsed);
  }
  if (elapsed >= curve.duration_s) return curve.peak();
  std::int64_t held = static_cast<std::int64_t>(curve.held_at_start);
  std::int64_t most = 0;
  bool started = false;
  for (const auto& step : curve.steps) {
    if (step.at_s > elapsed && !started) {
      most = held;  // what it holds now
      started = true;
    }
    held += step.delta;
    if (started) most = std::max(most, held);
  }
  if (!started) most = held;
  return static_cast<std::size_t>(std::max<std::int64_t>(most, 0));
}

}  // namespace

bool time_shift_solver::fits(double shift, const usage_curve& candidate, std::size_t budget) const {
  // Both lists are in time order: walk them together, returns before allocations on ties.
  std::int64_t held = as_signed(others_now_) + as_signed(candidate.held_at_start);
  const std::int64_t limit = as_signed(budget);
  if (held > limit) return false;
  std::size_t i = 0;
  std::size_t j = 0;
  const auto& steps = candidate.steps;
  while (i < others_.size() || j < steps.size()) {
    const bool take_other =
        j == steps.size() ||
        (i < others_.size() &&
         (others_[i].first < shift + steps[j].at_s ||
          (others_[i].first == shift + steps[j].at_s && others_[i].second < 0)));
    const std::int64_t delta = take_other ? others_[i++].second : steps[j++].delta;
    held += delta;
    if (delta > 0 && held > limit) return false;
  }
  return true;
}

std::optional<double> time_shift_solver::solve(double now_s, std::size_t budget,
                                               const usage_curve& candidate,
                                               std::span<const other_job> others) {
  return solve(now_s, budget, candidate, candidate.peak(), others);
}

std::optional<double> time_shift_solver::solve(double now_s, std::size_t budget,
                                               const usage_curve& candidate,
                                               std::size_t candidate_peak,
                                               std::span<const other_job> others) {
  // Fast path, the common case: the most the others can hold from now on, plus our peak, fits.
  // One pass over each curve, nothing sorted or stored.
  std::size_t others_most = 0;
  for (const auto& job : others) others_most += most_held_from_now(job, now_s);
  if (others_most + candidate_peak <= budget) return 0.0;

  others_.clear();
  drops_.clear();
  others_now_ = 0;
  for (const auto& job : others) {
    if (!job.running || job.curve == nullptr) {
      others_now_ += job.held_between;
      continue;
    }
    const double elapsed = now_s - job.started_s;
    if (elapsed >= job.curve->duration_s) {
      others_now_ += job.curve->peak();  // late: assume the worst until it reports its end
      continue;
    }
    others_now_ += job.curve->held_at(elapsed);
    for (const auto& step : job.curve->steps) {
      if (step.at_s > elapsed) others_.emplace_back(step.at_s - elapsed, step.delta);
    }
  }
  // Each job's events are in time order already: merging them is a stable sort by time (ties
  // broken returns first, which the merge in fits() relies on).
  std::stable_sort(others_.begin(), others_.end(), [](const event& a, const event& b) {
    return a.first < b.first || (a.first == b.first && a.second < b.second);
  });
  if (fits(0, candidate, budget)) return 0.0;

  for (const auto& [at, delta] : others_) {
    if (delta < 0) drops_.push_back(at);
  }
  rises_.clear();
  for (const auto& step : candidate.steps) {
    if (step.delta > 0) rises_.push_back(step.at_s);
  }
  next_drop_.assign(rises_.size(), 0);
  double shift = 0;
  for (std::size_t tried = 0; tried < max_delays_tried; ++tried) {
    // The next candidate delay: one allocation placed just after one return, later than now.
    double next = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < rises_.size(); ++r) {
      auto& d = next_drop_[r];
      while (d < drops_.size() && drops_[d] - rises_[r] + after_release_s <= shift) ++d;
      if (d < drops_.size()) next = std::min(next, drops_[d] - rises_[r] + after_release_s);
    }
    if (next == std::numeric_limits<double>::infinity()) return std::nullopt;
    shift = next;
    if (fits(shift, candidate, budget)) return shift;
  }
  return std::nullopt;  // give up for now: waiting for an event is always safe
}

}  // namespace tandem::schedule
