#include "tandem/schedule/time_shift.hpp"

#include <algorithm>
#include <limits>

namespace tandem::schedule {

namespace {

// A candidate allocation is placed this long after the return it waits for, so that the
// merge orders the two without comparing equal floating-point times.
constexpr double after_release_s = 1e-9;

std::int64_t as_signed(std::size_t bytes) {
  return static_cast<std::int64_t>(bytes);
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
  std::sort(others_.begin(), others_.end(), [](const event& a, const event& b) {
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
  for (;;) {
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
}

}  // namespace tandem::schedule
