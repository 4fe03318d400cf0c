// How long one scrooge decision takes: time_shift_solver::solve for a job beside 1-7 others,
// each iteration touching `regions` regions (taken in the forward pass, returned in the
// backward), in the two cases that matter: room at once (shift 0, one check) and a conflict
// that needs a TimeShift (several candidate delays tried).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "tandem/schedule/scrooge.hpp"
#include "tandem/schedule/time_shift.hpp"

namespace {

using tandem::schedule::other_job;
using tandem::schedule::time_shift_solver;
using tandem::schedule::usage_curve;

constexpr std::int64_t region = 64 << 20;

/// A forward pass taking `regions` regions over the first 40% of a 1 s iteration and a backward
/// pass returning them over the rest.
usage_curve pyramid(std::int64_t regions) {
  usage_curve c;
  c.held_at_start = 4 * region;
  c.duration_s = 1.0;
  for (std::int64_t i = 0; i < regions; ++i) {
    c.steps.push_back({0.4 * static_cast<double>(i) / static_cast<double>(regions), region});
  }
  for (std::int64_t i = 0; i < regions; ++i) {
    c.steps.push_back(
        {0.4 + 0.6 * static_cast<double>(i + 1) / static_cast<double>(regions), -region});
  }
  return c;
}

/// A budget under which one of `jobs` identical jobs must shift its iteration while the others
/// are `progress` into theirs (just past their peaks): it holds what they hold now plus our
/// persistent memory, and our peak beside what they keep between iterations, with half a region
/// to spare, but our forward pass can only follow their backward passes.
std::size_t tight_budget(const usage_curve& curve, std::int64_t jobs, double progress) {
  const auto others = static_cast<std::size_t>(jobs - 1);
  return std::max(others * curve.held_at(progress) + curve.held_at_start,
                  others * curve.held_at_end() + curve.peak()) +
         region / 2;
}

/// `state.range(0)` jobs in all (one asking, the others mid-iteration at their peak or staggered),
/// `state.range(1)` regions per iteration; `conflict` picks a budget that forces a shift.
void solve(benchmark::State& state, bool conflict) {
  const auto jobs = state.range(0);
  const auto regions = state.range(1);
  const auto curve = pyramid(regions);
  const tandem::schedule::indexed_curve index(curve);  // as the scrooge policy keeps profiles
  std::vector<other_job> others;
  for (std::int64_t j = 1; j < jobs; ++j) {
    // Room: job j is (j / jobs) of the way through its iteration. Conflict: every other job has
    // just passed its peak and is returning regions.
    const double progress = conflict ? 0.45 : static_cast<double>(j) / static_cast<double>(jobs);
    others.push_back({&curve, true, 10.0 - progress, 0, &index});
  }
  const auto peak = index.peak;
  const std::size_t budget =
      conflict ? tight_budget(curve, jobs, 0.45) : static_cast<std::size_t>(jobs) * peak;
  time_shift_solver solver;
  std::optional<double> shift;
  for (auto _ : state) {
    shift = solver.solve(10.0, budget, index, others);
    // The optional itself: DoNotOptimize on a plain double lets GCC pass it through a general
    // register, which garbled the counter below.
    benchmark::DoNotOptimize(shift);
  }
  state.counters["shift_ms"] = 1000 * shift.value_or(-1);  // -1000: no delay before an event
}

void BM_DecisionRoomAtOnce(benchmark::State& state) {
  solve(state, false);
}
void BM_DecisionWithTimeShift(benchmark::State& state) {
  solve(state, true);
}

/// The whole production decision: scrooge_policy::may_start for job 0, every job profiled, the
/// others mid-iteration with their borrows reported to the policy (as the pool's borrow gate
/// does), so that the iteration claims' safety check and then the TimeShift run. `conflict`
/// puts the others just past their peaks under a budget that forces a shift.
void decide(benchmark::State& state, bool conflict) {
  using namespace tandem::schedule;
  const auto jobs = static_cast<job_id>(state.range(0));
  const auto regions = state.range(1);
  const auto curve = pyramid(regions);
  const auto peak = curve.peak();
  const std::size_t budget = conflict ? tight_budget(curve, static_cast<std::int64_t>(jobs), 0.45)
                                      : static_cast<std::size_t>(jobs) * peak;
  scrooge_policy policy(budget, {.ramp_start = 1, .ramp_iterations = 0});
  double now = 0;
  for (job_id j = 0; j < jobs; ++j) {  // profile every job, alone
    policy.on_arrival(job_info::make(j, "job", now), now);
    static_cast<void>(policy.try_reserve(j, curve.held_at_start));
    static_cast<void>(policy.may_start(j, now));
    policy.on_iteration_start(j, now);
    policy.on_iteration_end(j, {now, now + 1, peak, curve, {}}, now + 1);
    now += 1;
  }
  for (job_id j = 1; j < jobs; ++j) {  // the others run, staggered (or all just past their peaks)
    const double progress = conflict ? 0.45 : static_cast<double>(j) / static_cast<double>(jobs);
    const double started = now - progress;
    policy.on_iteration_start(j, started);
    const auto held = curve.held_at(progress);
    static_cast<void>(policy.try_reserve(j, held - curve.held_at_start));
  }
  tandem::schedule::decision verdict;
  for (auto _ : state) {
    verdict = policy.may_start(0, now);
    benchmark::DoNotOptimize(verdict);
  }
  state.counters["starts"] = verdict.what == decision::verdict::start ? 1 : 0;
  state.counters["waits_until"] = verdict.what == decision::verdict::wait_until ? 1 : 0;
}

void BM_ScroogeDecisionRoom(benchmark::State& state) {
  decide(state, false);
}
void BM_ScroogeDecisionShift(benchmark::State& state) {
  decide(state, true);
}

BENCHMARK(BM_ScroogeDecisionRoom)->ArgsProduct({{2, 4, 8}, {16, 64}});
BENCHMARK(BM_ScroogeDecisionShift)->ArgsProduct({{2, 4, 8}, {16, 64}});
BENCHMARK(BM_DecisionRoomAtOnce)->ArgsProduct({{2, 4, 8}, {16, 64}});
BENCHMARK(BM_DecisionWithTimeShift)->ArgsProduct({{2, 4, 8}, {16, 64}});

}  // namespace
