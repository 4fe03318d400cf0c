#pragma once
// The admission of a job not yet built, one rule for scrooge, nodegroup and Salus. Its first
// grant builds it (its persistent memory) and runs an iteration whose peak nobody may know yet,
// so it is let in only while what the jobs already there hold leaves room for an iteration as
// large as the largest among them (and its own, where known). With nobody holding memory, or no
// iteration peak known to make room for, it is always admitted: a job that waits holds nobody
// up, and as jobs leave, room appears, so departures guarantee progress.
//
// What "holds" means is each policy's: scrooge counts what each job holds between iterations,
// nodegroup what each holds now (it reads progress); Salus decides its probes with its lanes and
// shares only fits_beside, for its persistent + ephemeral checks against the budget. A job
// let in again after its iteration restarted short of memory follows restart_need_after.

#include <algorithm>
#include <cstddef>

namespace tandem::schedule {

/// Whether `need` bytes fit beside `held` within `budget`: held + need <= budget, without
/// overflow whatever the values.
[[nodiscard]] constexpr bool fits_beside(std::size_t held, std::size_t need, std::size_t budget) {
  return held <= budget && need <= budget - held;
}

/// What a job whose iteration restarted short of memory needs before it starts again, one rule
/// for scrooge and nodegroup: what the cut iteration reached (`reached`), or the whole budget
/// when it got no further than the need `previous` its last restart left. Such a restart was let
/// start on a need that still did not fit (what the others hold moves a little): it waits for
/// them to leave.
[[nodiscard]] constexpr std::size_t restart_need_after(std::size_t reached, std::size_t previous,
                                                       std::size_t budget) {
  return reached > previous ? reached : budget;
}

/// The jobs already present as a newcomer's admission sees them.
class newcomer_admission {
 public:
  /// One job already present: what it holds, and the most one of its iterations was seen to
  /// hold (0: none measured yet).
  void count(std::size_t held, std::size_t iteration_peak) {
    held_ += held;
    largest_peak_ = std::max(largest_peak_, iteration_peak);
  }
  /// The newcomer's own iteration peak, when known (a profile, a job like it).
  void count_own(std::size_t iteration_peak) {
    largest_peak_ = std::max(largest_peak_, iteration_peak);
  }

  [[nodiscard]] std::size_t held() const { return held_; }
  [[nodiscard]] std::size_t largest_peak() const { return largest_peak_; }

  /// The rule above, against `budget_bytes`.
  [[nodiscard]] bool admits(std::size_t budget_bytes) const;

 private:
  std::size_t held_ = 0;
  std::size_t largest_peak_ = 0;
};

}  // namespace tandem::schedule
