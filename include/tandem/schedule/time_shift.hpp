#pragma once
// Zico's TimeShift (§5.2-§5.3), for any number of jobs: how long a job must delay its next
// iteration so that the predicted region usage of all jobs together stays within the budget at
// every moment of that iteration.
//
// The prediction is a sum of step functions. Every other job contributes what it holds now and,
// when it is mid-iteration, the rest of its usage curve from where it should be by now (or, when
// it has run past its predicted end, its peak with no release in sight: nothing is promised
// then). The candidate contributes its curve shifted by the delay. A fast path answers the
// common case first (the most the others can still hold plus the candidate's peak fits: start
// now) in O(log M) per job with indexed curves. Otherwise an earliest-fit sweep: at a delay, the
// first segment of the candidate's curve that meets a piece of the others' usage it does not fit
// beside can only move after that piece, so the delay jumps to the earliest window where the
// segment fits, and the check starts again. Delays only grow and skip only delays that cannot
// work, so the first that fits everywhere is the smallest. Each check is O(K+M) for K pieces of
// the others and M segments of the candidate; after 64 jumps the solver gives up (the job waits
// for the next event, which is always safe).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "tandem/schedule/usage_curve.hpp"

namespace tandem::schedule {

/// Another job as the prediction sees it.
struct other_job {
  const usage_curve* curve = nullptr;    ///< its usage per iteration (needed while running)
  bool running = false;                  ///< mid-iteration
  double started_s = 0;                  ///< when that iteration started
  std::size_t held_between = 0;          ///< bytes it holds between iterations (when not running)
  const indexed_curve* index = nullptr;  ///< the same curve indexed: faster, optional
};

/// Reusable buffers: a decision allocates nothing once they have grown.
class time_shift_solver {
 public:
  /// The smallest delay (seconds, >= 0) after which `candidate` can run its iteration with the
  /// predicted total within `budget`; empty when no delay works before the others' current
  /// iterations are over (ask again after one of them ends).
  [[nodiscard]] std::optional<double> solve(double now_s, std::size_t budget,
                                            const usage_curve& candidate,
                                            std::span<const other_job> others);
  /// The same for a candidate whose peak and segments are kept indexed (scrooge's profiles):
  /// nothing about the candidate is computed again.
  [[nodiscard]] std::optional<double> solve(double now_s, std::size_t budget,
                                            const indexed_curve& candidate,
                                            std::span<const other_job> others);

 private:
  using event = std::pair<double, std::int64_t>;  // (seconds from now, bytes)
  [[nodiscard]] std::optional<double> solve(double now_s, std::size_t budget,
                                            std::size_t candidate_peak,
                                            const curve_segments& candidate,
                                            std::span<const other_job> others);
  /// Fills piece_start_ and level_ with the others' predicted usage from now on, merging their
  /// future changes in time order (returns first on ties); true when they only return regions.
  bool build_pieces(double now_s, std::span<const other_job> others);
  /// The common case where every other job only returns regions from now on (past its peak):
  /// the smallest shift in one pass over the pieces and the candidate's segments.
  [[nodiscard]] std::optional<double> solve_returning(std::int64_t limit,
                                                      const curve_segments& candidate) const;

  std::vector<event> others_;        // the others' future changes, in time order
  std::vector<event> merged_;        // scratch for merging the others' runs
  std::vector<std::size_t> runs_;    // where each other job's run of changes begins
  std::vector<double> piece_start_;  // the others' usage as pieces: where each starts...
  std::vector<std::int64_t> level_;  // ...and the bytes they hold over it
  curve_segments segments_;          // a candidate given as a plain usage_curve
};

}  // namespace tandem::schedule
