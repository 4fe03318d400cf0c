#pragma once
// Zico's TimeShift (§5.2-§5.3), for any number of jobs: how long a job must delay its next
// iteration so that the predicted region usage of all jobs together stays within the budget at
// every moment of that iteration.
//
// The prediction is a sum of step functions. Every other job contributes what it holds now and,
// when it is mid-iteration, the rest of its usage curve from where it should be by now (or, when
// it has run past its predicted end, its peak with no release in sight: nothing is promised
// then). The candidate contributes its curve shifted by the delay. The smallest delay is either
// 0 or puts one of the candidate's region allocations just after one of the others' returns
// (moving earlier than that would overlap the two), so those are the only delays tried, in
// increasing order, each checked by one merge of the two step functions: O(K+M) per check for K
// steps of the others and M of the candidate. Before that, a fast path answers the common case
// (the most the others can still hold plus the candidate's peak fits: start now) in O(log M) per
// job with indexed curves. After 64 failed delays the solver gives up (the job waits for the
// next event, which is always safe), so a decision never costs more than 64 merges.

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
  /// The same, with the candidate's peak known (indexed_curve::peak).
  [[nodiscard]] std::optional<double> solve(double now_s, std::size_t budget,
                                            const usage_curve& candidate,
                                            std::size_t candidate_peak,
                                            std::span<const other_job> others);

 private:
  using event = std::pair<double, std::int64_t>;  // (seconds from now, bytes)
  [[nodiscard]] bool fits(double shift, const usage_curve& candidate, std::size_t budget) const;

  std::vector<event> others_;           // the others' future changes, in time order
  std::vector<double> drops_;           // times of the others' returns, in order
  std::vector<double> rises_;           // offsets of the candidate's allocations
  std::vector<std::size_t> next_drop_;  // per rise: the first drop not yet tried with it
  std::size_t others_now_ = 0;
};

}  // namespace tandem::schedule
