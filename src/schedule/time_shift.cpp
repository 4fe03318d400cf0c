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

namespace {

/// The others' usage from now on as pieces: level(p) holds from start(p) to start(p + 1), the
/// last for good; piece 0 starts now. Pieces may start at the same time (steps at one moment).
struct stored_pieces {
  const std::vector<double>& starts;
  const std::vector<std::int64_t>& levels;
  [[nodiscard]] std::size_t size() const { return levels.size(); }
  [[nodiscard]] double start(std::size_t p) const { return starts[p]; }
  [[nodiscard]] std::int64_t level(std::size_t p) const { return levels[p]; }
};

/// The same read in place off one job's indexed curve, `done` steps into it, `elapsed` seconds
/// after it began, beside `steady` bytes that the rest hold for good: nothing is copied.
struct indexed_pieces {
  const indexed_curve& index;
  std::size_t done = 0;
  double elapsed = 0;
  std::int64_t steady = 0;
  [[nodiscard]] std::size_t size() const { return 1 + index.held_after.size() - done; }
  [[nodiscard]] double start(std::size_t p) const {
    return p == 0 ? 0.0 : index.curve.steps[done + p - 1].at_s - elapsed;
  }
  [[nodiscard]] std::int64_t level(std::size_t p) const {
    return steady + as_signed(index.held_after_steps(done + p));
  }
};

/// The smallest shift when the others only return regions from now on, so that their usage
/// never rises again: a segment of the candidate fits for good once it starts where the others
/// have come down to what it leaves. Only the segments that raise the candidate's most-so-far
/// bind (a lower one starts later beside less), and their thresholds fall, so one pointer walks
/// the others' pieces once: O(K + M). The caller has checked that the candidate's peak fits
/// beside the last piece.
template <class Pieces>
std::optional<double> shift_beside_returns(std::int64_t limit, const curve_segments& candidate,
                                           const Pieces& pieces) {
  if (pieces.level(0) + candidate.held[0] > limit) return std::nullopt;  // what it holds already
  const auto count = pieces.size();
  double shift = 0;
  std::size_t p = 0;
  for (const auto& rise : candidate.rises) {
    while (p < count && pieces.level(p) + rise.held > limit) ++p;
    if (p == count) return std::nullopt;  // checked before: cannot happen
    // After the return that brings the others down far enough; ties go to the return.
    const double room_from = p == 0 ? 0.0 : pieces.start(p) + after_release_s;
    shift = std::max(shift, room_from - rise.offset);
  }
  return shift;
}

}  // namespace

std::optional<double> time_shift_solver::solve_returning(std::int64_t limit,
                                                         const curve_segments& candidate) const {
  return shift_beside_returns(limit, candidate, stored_pieces{piece_start_, level_});
}

namespace {

/// Where `job`'s steps still to come begin, `elapsed` into its iteration.
std::vector<usage_step>::const_iterator next_step(const other_job& job, double elapsed) {
  const auto& steps = job.curve->steps;
  return std::upper_bound(steps.begin(), steps.end(), elapsed,
                          [](double t, const usage_step& step) { return t < step.at_s; });
}

/// Whether `job` is mid-iteration and within its predicted duration: it has changes to come.
bool has_changes_to_come(const other_job& job, double now_s) {
  return job.running && job.curve != nullptr && now_s - job.started_s < job.curve->duration_s;
}

}  // namespace

bool time_shift_solver::build_pieces(double now_s, std::span<const other_job> others) {
  others_.clear();
  runs_.clear();
  std::size_t now_held = 0;
  const other_job* only = nullptr;  // the one job with changes to come, if just one has
  std::vector<usage_step>::const_iterator only_next;  // and its first step to come
  std::size_t with_changes = 0;
  for (const auto& job : others) {
    if (!job.running || job.curve == nullptr) {
      now_held += job.held_between;
      continue;
    }
    const double elapsed = now_s - job.started_s;
    if (elapsed >= job.curve->duration_s) {
      now_held += job.curve->peak();  // late: assume the worst until it reports its end
      continue;
    }
    const auto next = next_step(job, elapsed);
    const auto done = static_cast<std::size_t>(next - job.curve->steps.begin());
    if (job.index != nullptr) {
      now_held += done == 0 ? job.curve->held_at_start : job.index->held_after[done - 1];
    } else {
      now_held += job.curve->held_at(elapsed);
    }
    only = &job;
    only_next = next;
    ++with_changes;
  }
  piece_start_.assign(1, 0.0);
  level_.assign(1, static_cast<std::int64_t>(now_held));
  bool only_returns = true;
  const auto add = [&](double at, std::int64_t delta) {
    if (at > piece_start_.back()) {
      piece_start_.push_back(at);
      level_.push_back(level_.back());
    }
    level_.back() += delta;
    only_returns = only_returns && delta <= 0;
  };
  if (with_changes == 1) {  // the usual pair: its steps are the pieces, no merge needed
    const double elapsed = now_s - only->started_s;
    for (auto step = only_next; step != only->curve->steps.end(); ++step) {
      add(step->at_s - elapsed, step->delta);
    }
    return only_returns;
  }
  for (const auto& job : others) {
    if (!has_changes_to_come(job, now_s)) continue;
    const double elapsed = now_s - job.started_s;
    runs_.push_back(others_.size());
    for (auto step = next_step(job, elapsed); step != job.curve->steps.end(); ++step) {
      others_.emplace_back(step->at_s - elapsed, step->delta);
    }
  }
  // Each job's changes are in time order already (a usage_curve's steps are): merge the runs
  // pairwise, in buffers kept between decisions. (time, bytes) order puts returns first on
  // equal times and orders equal changes alike.
  runs_.push_back(others_.size());
  while (runs_.size() > 3) {
    merged_.resize(others_.size());
    std::size_t kept = 0;
    for (std::size_t r = 0; r + 1 < runs_.size(); r += 2) {
      const auto first = static_cast<std::ptrdiff_t>(runs_[r]);
      const auto middle = static_cast<std::ptrdiff_t>(runs_[r + 1]);
      const auto last =
          static_cast<std::ptrdiff_t>(r + 2 < runs_.size() ? runs_[r + 2] : runs_[r + 1]);
      std::merge(others_.begin() + first, others_.begin() + middle, others_.begin() + middle,
                 others_.begin() + last, merged_.begin() + first);
      runs_[kept++] = runs_[r];
    }
    runs_[kept++] = others_.size();
    runs_.resize(kept);
    others_.swap(merged_);
  }
  // The last two runs (or the one left) merge straight into the pieces.
  if (others_.empty()) return only_returns;
  const auto middle = others_.begin() + static_cast<std::ptrdiff_t>(runs_[runs_.size() - 2]);
  auto first = others_.begin();
  auto second = middle;
  while (first != middle && second != others_.end()) {
    const auto& next = *second < *first ? *second++ : *first++;
    add(next.first, next.second);
  }
  for (; first != middle; ++first) add(first->first, first->second);
  for (; second != others_.end(); ++second) add(second->first, second->second);
  return only_returns;
}

std::optional<double> time_shift_solver::solve(double now_s, std::size_t budget,
                                               const usage_curve& candidate,
                                               std::span<const other_job> others) {
  segments_of(candidate, segments_);
  return solve(now_s, budget, candidate.peak(), segments_, others);
}

std::optional<double> time_shift_solver::solve(double now_s, std::size_t budget,
                                               const indexed_curve& candidate,
                                               std::span<const other_job> others) {
  return solve(now_s, budget, candidate.peak, candidate.segments, others);
}

std::optional<double> time_shift_solver::solve(double now_s, std::size_t budget,
                                               std::size_t candidate_peak,
                                               const curve_segments& candidate,
                                               std::span<const other_job> others) {
  // Fast path, the common case: the most the others can hold from now on, plus our peak, fits.
  // One pass over the others, nothing sorted or stored; it also finds, for the usual pair, where
  // the one job with changes to come stands in its indexed curve.
  std::size_t others_most = 0;
  std::size_t steady = 0;  // held for good by the jobs with no change to come
  std::size_t changing = 0;
  const other_job* indexed = nullptr;
  std::size_t indexed_done = 0;
  for (const auto& job : others) {
    if (!has_changes_to_come(job, now_s)) {
      const auto held = most_held_from_now(job, now_s);
      others_most += held;
      steady += held;
      continue;
    }
    ++changing;
    if (job.index == nullptr) {
      others_most += most_held_from_now(job, now_s);
      continue;
    }
    indexed = &job;
    indexed_done = job.index->steps_done(now_s - job.started_s);
    others_most += job.index->most_held_after_steps(indexed_done);
  }
  if (others_most + candidate_peak <= budget) return 0.0;
  const std::int64_t limit = as_signed(budget);

  // The usual pair with the other job past its peak: its steps still to come are the pieces,
  // read in place.
  if (changing == 1 && indexed != nullptr && indexed_done >= indexed->index->returns_from) {
    const indexed_pieces pieces{*indexed->index, indexed_done, now_s - indexed->started_s,
                                as_signed(steady)};
    if (pieces.level(pieces.size() - 1) + as_signed(candidate_peak) > limit) return std::nullopt;
    return shift_beside_returns(limit, candidate, pieces);
  }

  // The others' usage as pieces: level_[k] holds from piece_start_[k] to piece_start_[k + 1].
  const bool only_returns = build_pieces(now_s, others);
  // Past the others' iterations their level stays; if the candidate's peak does not fit beside
  // it, no delay works until one of them ends.
  if (level_.back() + as_signed(candidate_peak) > limit) return std::nullopt;
  if (only_returns) return solve_returning(limit, candidate);
  const auto& offset = candidate.offset;
  const auto& held = candidate.held;

  // Earliest fit: at a shift, find the first candidate segment that overlaps a piece of the
  // others' usage it does not fit beside; no shift until that segment can sit after the piece
  // works, so jump to the earliest start of a window, after the segment's current start, in
  // which the others stay low enough for it. Each jump is to a piece boundary, so the shifts
  // only grow and the first one that fits everywhere is the smallest.
  double shift = 0;
  for (std::size_t jumps = 0; jumps < max_delays_tried; ++jumps) {
    std::size_t k = 0;  // the piece at the segment's start, advanced monotonically
    std::optional<std::size_t> bad;
    for (std::size_t j = 0; j + 1 < offset.size() && !bad; ++j) {
      const double from = j == 0 ? 0.0 : shift + offset[j];
      const double to = shift + offset[j + 1];
      while (k + 1 < piece_start_.size() && piece_start_[k + 1] <= from) ++k;
      for (std::size_t p = k; p < piece_start_.size() && (p == k || piece_start_[p] < to); ++p) {
        if (level_[p] + held[j] > limit) {
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
    const double length = offset[j + 1] - offset[j];
    const std::int64_t room = limit - held[j];
    double start = shift + offset[j];
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
    shift = start - offset[j];
  }
  return std::nullopt;  // give up for now: waiting for an event is always safe
}

}  // namespace tandem::schedule
