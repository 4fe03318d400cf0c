#pragma once
// What every job holds and may still take before its running iteration ends, so that region
// borrows can be judged one by one (Dijkstra's banker's algorithm over iterations): a borrow is
// granted only when, after it, some order exists in which every running iteration can reach
// its claim and end, each using the regions the ones before it returned. See Note [Waiting for
// regions cannot deadlock] in iteration_claims.cpp.
//
// A running iteration's claim comes from its job's latest measured curve (indexed_curve): its
// peak until the iteration is past it, then the most the curve holds from the point past
// the peak where it holds what the job holds now. So a claim shrinks as a backward pass returns
// regions and does not depend on how fast the job runs beside the others. A job with no curve
// yet claims what it holds.
//
// Not thread-safe: the owner (scrooge) serializes calls.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "tandem/memory/trace.hpp"
#include "tandem/schedule/usage_curve.hpp"

namespace tandem::schedule {

using memory::job_id;

class iteration_claims {
 public:
  /// `margin_borrows`: how many of a curve's largest borrows every claim keeps beyond the curve
  /// (see claim_of in iteration_claims.cpp); 0 trusts the curves exactly.
  explicit iteration_claims(std::size_t budget_bytes, std::size_t margin_borrows = 0)
      : budget_(budget_bytes), margin_borrows_(margin_borrows) {}

  void set_budget(std::size_t bytes) { budget_ = bytes; }
  [[nodiscard]] std::size_t budget() const { return budget_; }

  /// The job's iteration starts; `curve` predicts it (nullptr: unknown, it claims what it holds).
  void start(job_id job, std::shared_ptr<const indexed_curve> curve);
  /// The job's iteration ended; it keeps what it holds.
  void end(job_id job);
  /// The job left: it is forgotten once it has returned everything it holds.
  void depart(job_id job);

  /// Judges a borrow of `bytes` by `job`: true reserves them (held from now on).
  [[nodiscard]] bool try_reserve(job_id job, std::size_t bytes);
  /// Undoes a reservation the pool could not supply.
  void cancel(job_id job, std::size_t bytes);
  /// `job` returned `bytes` of regions.
  void returned(job_id job, std::size_t bytes);
  /// After `job` was refused: whether another running iteration will return regions or will be
  /// let through (see the Note). False: every running iteration is stuck, and one of them must
  /// let go (the driver chooses which) or nothing will change.
  [[nodiscard]] bool others_will_move(job_id job) const;

  /// Whether `job` may start an iteration that `curve` predicts now: with it claiming the
  /// curve's peak from its start, every running iteration can still finish.
  [[nodiscard]] bool admits_start(job_id job, const indexed_curve& curve) const;

  [[nodiscard]] std::size_t held(job_id job) const;
  [[nodiscard]] std::size_t total_held() const { return total_held_; }
  /// The most `job`'s running iteration may still hold (what it holds when not running).
  [[nodiscard]] std::size_t claim(job_id job) const;
  /// Whether `job`'s running (or latest) iteration took more than its curve predicted.
  [[nodiscard]] bool exceeded_claim(job_id job) const;
  /// Borrows of `job` refused during its running (or latest) iteration.
  [[nodiscard]] std::int64_t refusals(job_id job) const;
  /// Borrows let through beyond the safety check because every other iteration was waiting.
  [[nodiscard]] std::int64_t insisted() const { return insisted_; }

 private:
  struct entry {
    std::size_t held = 0;
    std::size_t most_held = 0;  // the most it held in the running iteration so far
    // The lowest estimate of its claim so far in the running iteration: each estimate bounds
    // the rest of the iteration from where it was made, so the lowest still does, and a claim
    // that never rises is what keeps a granted request within it (the Note, 2).
    std::size_t ceiling = 0;
    bool running = false;
    bool departed = false;
    std::size_t events = 0;       // region borrows and returns in the running iteration
    std::uint64_t seniority = 0;  // order of iteration starts: lower started earlier
    std::shared_ptr<const indexed_curve> curve;
    std::optional<std::size_t> waiting_for;  // a refused request not yet granted
    bool exceeded = false;
    std::int64_t refusals = 0;
  };

  [[nodiscard]] std::size_t claim_of(const entry& e) const;
  /// The most the rest of running iteration `e` (with a curve) holds, judged from where it is.
  [[nodiscard]] std::size_t estimate(const entry& e) const;
  /// After a borrow or return of `e`: counts it and lowers the ceiling.
  void moved(entry& e) const;
  /// Whether the running iteration `e` (with a curve) is past its predicted peak.
  [[nodiscard]] static bool past_peak(const entry& e);
  [[nodiscard]] std::size_t after_of(const entry& e) const;
  /// The banker's test over the running iterations; with `starting`, as if that job had just
  /// started an iteration that `curve` predicts.
  [[nodiscard]] bool safe(std::optional<job_id> starting = std::nullopt,
                          const indexed_curve* curve = nullptr,
                          std::optional<job_id> growing = std::nullopt,
                          std::size_t bytes = 0) const;
  /// Whether a borrow of `bytes` by running `job` would be granted now (without insisting).
  [[nodiscard]] bool grantable(job_id job, std::size_t bytes) const;
  /// A running iteration whose noted request would still be refused now.
  [[nodiscard]] bool stuck(job_id job, const entry& e) const;
  /// Every running iteration other than `job` is waiting for regions.
  [[nodiscard]] bool all_others_waiting(job_id job) const;
  /// The running iteration that started first among those waiting whose request fits the
  /// budget: the one let through when nobody else can move.
  [[nodiscard]] std::optional<job_id> next_to_insist() const;
  void forget_if_gone(std::map<job_id, entry>::iterator found);
  /// `bytes` leave `job`'s holdings: returned (`moved_on`, a region move of its iteration) or a
  /// reservation cancelled (as if never made).
  void give_back(job_id job, std::size_t bytes, bool moved_on);

  std::size_t budget_;
  std::size_t margin_borrows_;
  std::size_t total_held_ = 0;
  std::uint64_t next_seniority_ = 0;
  std::int64_t insisted_ = 0;
  std::map<job_id, entry> jobs_;
  struct step {
    std::int64_t need;        // bytes it may still take
    std::int64_t gives_back;  // bytes it returns when it ends
  };
  mutable std::vector<step> pending_;  // reused by safe()
};

}  // namespace tandem::schedule
