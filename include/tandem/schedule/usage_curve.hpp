#pragma once
// A job's device memory over one iteration, at region granularity (Zico §5.1): the bytes of
// regions it holds when the iteration starts and every change after that, at times relative to
// the iteration's start. Regions are what the budget bounds, so this is what a memory-aware
// policy predicts with.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::schedule {

struct usage_step {
  double at_s = 0;         ///< seconds after the iteration started
  std::int64_t delta = 0;  ///< bytes of regions taken (> 0) or returned (< 0)
  friend bool operator==(const usage_step&, const usage_step&) = default;
};

struct usage_curve {
  std::size_t held_at_start = 0;  ///< bytes of regions held when the iteration began
  std::vector<usage_step> steps;  ///< in time order
  double duration_s = 0;          ///< the iteration's length

  /// Bytes held `offset_s` seconds into the iteration (after every step at or before it).
  [[nodiscard]] std::size_t held_at(double offset_s) const;
  /// The most bytes held at any moment of the iteration.
  [[nodiscard]] std::size_t peak() const;
  /// Bytes held once the iteration is over.
  [[nodiscard]] std::size_t held_at_end() const;
};

/// One allocation (bytes > 0) or free (bytes < 0) of an iteration, in the order the job made
/// them, with the bytes of regions the job held right after it. The sequence repeats every
/// iteration, so positions in it (allocation ordinals) name the same point of every iteration:
/// what NodeGroup gating is matched on.
struct memory_event {
  std::int64_t bytes = 0;
  std::size_t held_after = 0;
  friend bool operator==(const memory_event&, const memory_event&) = default;
};

/// A curve as segments of constant holding: offset[j] (seconds from the start) to offset[j + 1]
/// at held[j]. Segment 0 is what is held at the start; steps at the same time are one segment;
/// the last segment never ends (offset.back() is infinity).
struct curve_segments {
  std::vector<double> offset;
  std::vector<std::int64_t> held;
  /// The segments j >= 1 that hold more than every segment before them, in order, with their
  /// start and holding side by side (what the TimeShift walks).
  struct rise {
    double offset = 0;
    std::int64_t held = 0;
  };
  std::vector<rise> rises;
};
/// Fills `out` (reusing its buffers) with `c`'s segments.
void segments_of(const usage_curve& c, curve_segments& out);

/// A curve prepared for fast questions about "from now on": prefix holdings and suffix maxima,
/// built once per profile so that a decision costs O(log M) per job in the common case.
struct indexed_curve {
  usage_curve curve;
  std::vector<std::size_t> held_after;  ///< held after step i
  std::vector<std::size_t> most_from;   ///< the most held after any step j >= i
  std::size_t peak = 0;
  std::size_t peak_step = 0;  ///< the first step after which the curve holds its peak
  curve_segments segments;    ///< for the TimeShift of a job about to start
  /// The largest rise after the peak: how much the curve takes again, past its peak, above the
  /// lowest it held since the peak (a backward pass that allocates gradients as it frees).
  std::size_t post_peak_rise = 0;
  /// A claim's unit of margin: the smallest step that takes regions (a borrow: a region, where
  /// regions are small against the iteration), at most a quarter of what the iteration takes.
  std::size_t margin_unit = 0;
  /// The first step from which the curve only returns regions (one past its last rise).
  std::size_t returns_from = 0;

  explicit indexed_curve(usage_curve c);
  /// How many steps have happened `offset_s` into the iteration (those at or before it).
  [[nodiscard]] std::size_t steps_done(double offset_s) const;
  /// What the curve holds once `done` steps have happened.
  [[nodiscard]] std::size_t held_after_steps(std::size_t done) const {
    return done == 0 ? curve.held_at_start : held_after[done - 1];
  }
  /// The most the curve holds from the moment `done` steps have happened on.
  [[nodiscard]] std::size_t most_held_after_steps(std::size_t done) const;
  /// The most held at any moment from `offset_s` on (including what is held at offset_s).
  [[nodiscard]] std::size_t most_held_from(double offset_s) const;
  /// Past the peak, the most held from the first step at which the curve holds `held` or less
  /// (the job's position read off its holdings); what it holds at the end when none does.
  [[nodiscard]] std::size_t most_held_past_peak_from(std::size_t held) const;
};

}  // namespace tandem::schedule
