#include "tandem/schedule/time_shift.hpp"

#include <algorithm>
#include <limits>

namespace tandem::schedule {

namespace {

// A candidate segment is placed this long after the piece it waits for, so that the check does
// not compare equal floating-point times.
constexpr double after_release_s = 1e-9;

// Jumps tried before the solver gives up and the job waits for the next event: bounds the rare
// worst case (each jump passes at least one piece of the others' usage).
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
  // The others' usage as pieces: level_[k] holds from piece_start_[k] to piece_start_[k + 1].
  piece_start_.assign(1, 0.0);
  level_.assign(1, static_cast<std::int64_t>(others_now_));
  for (const auto& [at, delta] : others_) {
    if (at > piece_start_.back()) {
      piece_start_.push_back(at);
      level_.push_back(level_.back());
    }
    level_.back() += delta;
  }
  // Past the others' iterations their level stays; if the candidate's peak does not fit beside
  // it, no delay works until one of them ends.
  const std::int64_t limit = as_signed(budget);
  if (level_.back() + as_signed(candidate_peak) > limit) return std::nullopt;
  // The candidate as segments: offset_[j] to offset_[j + 1] at held_[j].
  offset_.clear();
  held_.clear();
  std::int64_t held = as_signed(candidate.held_at_start);
  offset_.push_back(0);
  held_.push_back(held);
  for (const auto& step : candidate.steps) {
    held += step.delta;
    // The first segment is what the candidate holds already: it starts now, not at the delay.
    if (offset_.size() == 1 || step.at_s > offset_.back()) {
      offset_.push_back(step.at_s);
      held_.push_back(held);
    } else {
      held_.back() = held;
    }
  }
  // After its iteration the candidate keeps what it holds at the end, beside whatever the others
  // still take: its last segment never ends.
  offset_.push_back(std::numeric_limits<double>::infinity());

  // Earliest fit: at a shift, find the first candidate segment that overlaps a piece of the
  // others' usage it does not fit beside; no shift until that segment can sit after the piece
  // works, so jump to the earliest start of a window, after the segment's current start, in
  // which the others stay low enough for it. Each jump is to a piece boundary, so the shifts
  // only grow and the first one that fits everywhere is the smallest.
  double shift = 0;
  for (std::size_t jumps = 0; jumps < max_delays_tried; ++jumps) {
    std::size_t k = 0;  // the piece at the segment's start, advanced monotonically
    std::optional<std::size_t> bad;
    for (std::size_t j = 0; j + 1 < offset_.size() && !bad; ++j) {
      const double from = j == 0 ? 0.0 : shift + offset_[j];
      const double to = shift + offset_[j + 1];
      while (k + 1 < piece_start_.size() && piece_start_[k + 1] <= from) ++k;
      for (std::size_t p = k; p < piece_start_.size() && (p == k || piece_start_[p] < to); ++p) {
        if (level_[p] + held_[j] > limit) {
          bad = j;
          break;
        }
      }
    }
    if (!bad) return shift;
    // What the candidate holds already does not fit beside the others at some moment before
    // its delay ends: a longer delay only makes that stretch longer.
    if (*bad == 0) return std::nullopt;
    // The earliest window of the segment's length, starting after it starts now, where the
    // others stay within what the segment leaves.
    const std::size_t j = *bad;
    const double length = offset_[j + 1] - offset_[j];
    const std::int64_t room = limit - held_[j];
    double start = shift + offset_[j];
    std::size_t p = 0;
    while (p + 1 < piece_start_.size() && piece_start_[p + 1] <= start) ++p;
    for (; p < piece_start_.size(); ++p) {
      const double piece_end = p + 1 < piece_start_.size()
                                   ? piece_start_[p + 1]
                                   : std::numeric_limits<double>::infinity();
      if (level_[p] > room) {
        start = piece_end + after_release_s;  // after this piece; ties go to the return
        continue;
      }
      if (piece_end >= start + length) break;  // the window fits in the low pieces so far
    }
    shift = start - offset_[j];
  }
  return std::nullopt;  // give up for now: waiting for an event is always safe
}

}  // namespace tandem::schedule
