// Zico's scrooge scheduler: the TimeShift computation on hand-made lifespans whose answers can be
// worked out on paper, a randomized check against brute force, and the policy's phases.

#include "tandem/schedule/scrooge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>

#include "tandem/common/error.hpp"

namespace tandem::schedule {
namespace {

/// Takes `rise` bytes at each of `rise_at`, returns `fall` bytes at each of `fall_at`.
usage_curve curve(std::size_t held, std::vector<double> rise_at, std::int64_t rise,
                  std::vector<double> fall_at, std::int64_t fall, double duration) {
  usage_curve c;
  c.held_at_start = held;
  c.duration_s = duration;
  for (double t : rise_at) c.steps.push_back({t, rise});
  for (double t : fall_at) c.steps.push_back({t, -fall});
  std::sort(c.steps.begin(), c.steps.end(), [](auto& a, auto& b) { return a.at_s < b.at_s; });
  return c;
}

// Forward pass: four regions of 100 taken 0.1 s apart; backward: returned 0.1 s apart.
const usage_curve pyramid = curve(100, {0.0, 0.1, 0.2, 0.3}, 100, {0.6, 0.7, 0.8, 0.9}, 100, 1.0);

TEST(UsageCurve, HeldPeakAndEnd) {
  EXPECT_EQ(pyramid.held_at(-1), 100u);
  EXPECT_EQ(pyramid.held_at(0.15), 300u);
  EXPECT_EQ(pyramid.peak(), 500u);
  EXPECT_EQ(pyramid.held_at_end(), 100u);
}

TEST(TimeShift, IdenticalJobsWithRoomStartAtOnce) {
  time_shift_solver solver;
  const std::vector<other_job> others{{&pyramid, true, 9.5, 0}};  // at its peak, 0.5 s in
  EXPECT_EQ(solver.solve(10.0, 800, pyramid, others), 0.0);
  const indexed_curve indexed(pyramid);
  EXPECT_EQ(indexed.peak, 500u);
  EXPECT_EQ(indexed.most_held_from(0.5), 500u);  // at the peak still
  EXPECT_EQ(indexed.most_held_from(0.75), 300u);
  EXPECT_EQ(indexed.most_held_from(5), 100u);
  const std::vector<other_job> with_index{{&pyramid, true, 9.5, 0, &indexed}};
  EXPECT_EQ(solver.solve(10.0, 800, pyramid, with_index), 0.0);
  EXPECT_NEAR(*solver.solve(10.0, 650, pyramid, with_index), 0.1, 1e-6);
}

TEST(TimeShift, IdenticalJobsOutOfPhaseByTheSmallestShift) {
  // Budget 650: the other job holds 500 and returns 100 every 0.1 s from 0.1 s on; our first
  // allocation (to 200) needs it at 400 or less, i.e. 0.1 s from now, and after that each of
  // our allocations meets one of its returns: 600 throughout.
  time_shift_solver solver;
  const std::vector<other_job> others{{&pyramid, true, 9.5, 0}};
  const auto shift = solver.solve(10.0, 650, pyramid, others);
  ASSERT_TRUE(shift);
  EXPECT_NEAR(*shift, 0.1, 1e-6);
}

TEST(TimeShift, BeefyBesideLeanWaitsForTheLeanBackward) {
  // Lean job: 100 held, +100 at 0, returned at 0.2. Beefy job: +600 over its forward.
  const auto lean = curve(100, {0.0}, 100, {0.2}, 100, 0.3);
  const auto beefy = curve(50, {0.0, 0.05, 0.1}, 200, {0.5, 0.6, 0.7}, 200, 0.8);
  time_shift_solver solver;
  const std::vector<other_job> others{{&lean, true, 5.0, 0}};  // lean at 0.05 s: holds 200
  // Budget 750: 200 + 50 + 600 = 850 at our peak; the lean job is back to 100 at 0.15 s from
  // now, so our last allocation (at 0.1 s into ours) must come after that: shift 0.05.
  const auto shift = solver.solve(5.05, 750, beefy, others);
  ASSERT_TRUE(shift);
  EXPECT_NEAR(*shift, 0.05, 1e-6);
}

TEST(TimeShift, ThreeAndFourJobsWaitForTheFirstReturnThatMakesRoom) {
  const auto block = curve(0, {0.0}, 300, {1.0}, 300, 1.0);
  time_shift_solver solver;
  // Two others: one ends 0.5 s from now, the other 0.8 s from now. 300 + 300 + ours 300 > 700.
  std::vector<other_job> others{{&block, true, 9.5, 0}, {&block, true, 9.8, 0}};
  auto shift = solver.solve(10.0, 700, block, others);
  ASSERT_TRUE(shift);
  EXPECT_NEAR(*shift, 0.5, 1e-6);
  // A third other ends 0.1 s from now; budget 1000: 900 + 300 until it ends.
  others.push_back({&block, true, 9.1, 0});
  shift = solver.solve(10.0, 1000, block, others);
  ASSERT_TRUE(shift);
  EXPECT_NEAR(*shift, 0.1, 1e-6);
}

TEST(TimeShift, IdleHoldingsCountAndNoShiftHelpsALateJob) {
  const auto block = curve(0, {0.0}, 300, {1.0}, 300, 1.0);
  time_shift_solver solver;
  // An idle job holding 500 leaves 500: ours (300) fits.
  EXPECT_EQ(solver.solve(0, 800, block, std::vector<other_job>{{&block, false, 0, 500}}), 0.0);
  // A job past its predicted end holds its peak until it reports: no delay is known to work.
  EXPECT_FALSE(solver.solve(10, 500, block, std::vector<other_job>{{&block, true, 8.0, 0}}));
}

/// Exact check of a shift: every moment of the predicted total, from a merge of all events.
bool feasible(double shift, double now, std::size_t budget, const usage_curve& candidate,
              const std::vector<other_job>& others) {
  std::vector<std::pair<double, std::int64_t>> events;
  std::int64_t held = static_cast<std::int64_t>(candidate.held_at_start);
  for (const auto& o : others) {
    if (!o.running) {
      held += static_cast<std::int64_t>(o.held_between);
      continue;
    }
    const double elapsed = now - o.started_s;
    if (elapsed >= o.curve->duration_s) {
      held += static_cast<std::int64_t>(o.curve->peak());
      continue;
    }
    held += static_cast<std::int64_t>(o.curve->held_at(elapsed));
    for (const auto& s : o.curve->steps)
      if (s.at_s > elapsed) events.emplace_back(s.at_s - elapsed, s.delta);
  }
  for (const auto& s : candidate.steps) events.emplace_back(shift + s.at_s, s.delta);
  std::sort(events.begin(), events.end());  // returns (negative) first on equal times
  if (held > static_cast<std::int64_t>(budget)) return false;
  for (const auto& [t, d] : events) {
    held += d;
    if (held > static_cast<std::int64_t>(budget)) return false;
  }
  return true;
}

usage_curve random_curve(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> regions(1, 12);
  std::uniform_real_distribution<double> unit(0, 1);
  const int n = regions(rng);
  usage_curve c;
  c.held_at_start = static_cast<std::size_t>(regions(rng)) * 10;
  c.duration_s = 0.5 + unit(rng);
  const double peak_at = c.duration_s * (0.3 + 0.4 * unit(rng));
  for (int i = 0; i < n; ++i) c.steps.push_back({peak_at * unit(rng), 64});
  for (int i = 0; i < n; ++i)
    c.steps.push_back({peak_at + (c.duration_s - peak_at) * unit(rng), -64});
  std::sort(c.steps.begin(), c.steps.end(), [](auto& a, auto& b) { return a.at_s < b.at_s; });
  return c;
}

/// The last allocation of a curve: past it, the curve only returns regions.
double last_rise(const usage_curve& c) {
  double at = 0;
  for (const auto& s : c.steps) {
    if (s.delta > 0) at = s.at_s;
  }
  return at;
}

/// 2000 random cases against brute force; with `past_peak`, every other job is past its last
/// allocation (the solver's one-pass case), else anywhere in or after its iteration.
void check_random_shifts(std::uint64_t seed, bool past_peak) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  int solved = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int n_others = 1 + static_cast<int>(rng() % 3);
    std::vector<usage_curve> curves;
    for (int i = 0; i <= n_others; ++i) curves.push_back(random_curve(rng));
    // Every other trial indexes the curves, as scrooge keeps them (the solver reads an indexed
    // job's steps in place), and asks with the candidate indexed too.
    const bool indexed = trial % 2 == 0;
    std::vector<indexed_curve> indexes(curves.begin(), curves.end());
    std::vector<other_job> others;
    for (int i = 1; i <= n_others; ++i) {
      const bool running = unit(rng) < 0.8;
      const auto k = static_cast<std::size_t>(i);
      const auto& c = curves[k];
      const double elapsed = past_peak ? last_rise(c) + (c.duration_s - last_rise(c)) * unit(rng)
                                       : c.duration_s * unit(rng) * 1.1;
      others.push_back({&c, running || past_peak, 10.0 - elapsed, c.held_at_end(),
                        indexed ? &indexes[k] : nullptr});
    }
    const auto budget = static_cast<std::size_t>(300 + rng() % 1500);
    time_shift_solver solver;
    const auto shift = indexed ? solver.solve(10.0, budget, indexes[0], others)
                               : solver.solve(10.0, budget, curves[0], others);
    // Brute force over every candidate: 0 and each allocation just after each return.
    std::vector<double> candidates{0};
    for (const auto& o : others) {
      if (!o.running || 10.0 - o.started_s >= o.curve->duration_s) continue;
      for (const auto& s : o.curve->steps)
        if (s.delta < 0 && s.at_s > 10.0 - o.started_s)
          for (const auto& mine : curves[0].steps)
            if (mine.delta > 0) {
              const double c = s.at_s - (10.0 - o.started_s) - mine.at_s + 1e-9;
              if (c > 0) candidates.push_back(c);
            }
    }
    std::sort(candidates.begin(), candidates.end());
    std::optional<double> best;
    for (double c : candidates) {
      if (feasible(c, 10.0, budget, curves[0], others)) {
        best = c;
        break;
      }
    }
    if (!shift) {
      // Allowed only when the smallest working delay lies beyond the 64 the solver tries.
      if (best) {
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
        const auto rank =
            std::lower_bound(candidates.begin(), candidates.end(), *best) - candidates.begin();
        EXPECT_GT(rank, 60) << "trial " << trial << ": a working delay was missed";
      }
      continue;
    }
    ASSERT_TRUE(best) << "trial " << trial;
    ++solved;
    EXPECT_NEAR(*shift, *best, 1e-7) << "trial " << trial;
    EXPECT_TRUE(feasible(*shift, 10.0, budget, curves[0], others)) << "trial " << trial;
  }
  EXPECT_GT(solved, 500);  // the generator makes mostly solvable cases
}

TEST(TimeShift, RandomizedShiftsKeepTheBudgetAndNoSmallerCandidateDoes) {
  check_random_shifts(20261122, false);
}

TEST(TimeShift, RandomizedShiftsBesideJobsPastTheirPeaksAreTheSmallest) {
  check_random_shifts(20261125, true);
}

// --- the policy ------------------------------------------------------------------------------

iteration_report report_of(double start, double end, const usage_curve& held) {
  return {start, end, held.peak(), held, {}};
}

TEST(Scrooge, TheFirstIterationOfAJobRunsAlone) {
  scrooge_policy policy(1000, {.ramp_start = 1, .ramp_iterations = 0});
  policy.on_arrival(job_info::make(1, "a", 0), 0);
  policy.on_arrival(job_info::make(2, "b", 0), 0);
  ASSERT_EQ(policy.may_start(1, 0), decision::start());
  policy.on_iteration_start(1, 0);
  EXPECT_EQ(policy.may_start(2, 0.1), decision::wait_for_event());  // a is profiling
  policy.on_iteration_end(1, report_of(0, 1, pyramid), 1);
  ASSERT_EQ(policy.may_start(2, 1), decision::start());  // nobody else runs: b profiles now
  policy.on_iteration_start(2, 1);
  EXPECT_EQ(policy.may_start(1, 1.1), decision::wait_for_event());  // not beside a profile
  policy.on_iteration_end(2, report_of(1, 2, pyramid), 2);
}

TEST(Scrooge, AJobWaitingToProfileIsNotStarvedByAJobThatKeepsStarting) {
  scrooge_policy policy(1000, {.ramp_start = 1, .ramp_iterations = 0});
  policy.on_arrival(job_info::make(1, "a", 0), 0);
  ASSERT_EQ(policy.may_start(1, 0), decision::start());
  policy.on_iteration_start(1, 0);
  policy.on_iteration_end(1, report_of(0, 1, pyramid), 1);
  ASSERT_EQ(policy.may_start(1, 1), decision::start());
  policy.on_iteration_start(1, 1);
  policy.on_arrival(job_info::make(2, "b", 1.5), 1.5);
  EXPECT_EQ(policy.may_start(2, 1.5), decision::wait_for_event());  // a is mid-iteration
  policy.on_iteration_end(1, report_of(1, 2, pyramid), 2);
  // a asks first (its thread runs on), but b is waiting to profile: a waits for it.
  EXPECT_EQ(policy.may_start(1, 2), decision::wait_for_event());
  EXPECT_EQ(policy.may_start(2, 2), decision::start());
}

TEST(Scrooge, ANewJobIsAdmittedOnlyWhenTheResidentJobsLeaveRoomForTheirLargestPeak) {
  // a and b are resident, each holding 200 between iterations (its persistent memory) and 500
  // at its peak. With 400 held, a newcomer whose peak may be like theirs does not fit 800.
  const usage_curve heavy = curve(200, {0.0, 0.1, 0.2}, 100, {0.6, 0.7, 0.8}, 100, 1.0);
  scrooge_policy policy(800, {.ramp_start = 1, .ramp_iterations = 0});
  for (job_id job : {1u, 2u}) {
    policy.on_arrival(job_info::make(job, "resident", 0), 0);
    ASSERT_EQ(policy.may_start(job, job), decision::start());
    policy.on_iteration_start(job, job);
    policy.on_iteration_end(job, report_of(job, job + 1, heavy), job + 1);
  }
  ASSERT_EQ(policy.may_start(1, 4), decision::start());
  policy.on_iteration_start(1, 4);
  policy.on_iteration_end(1, report_of(4, 4.9, heavy), 4.9);
  // The newcomer arrives while a resident runs, is not admitted, and holds nobody up (it once
  // did: the residents waited for it to run alone while it waited for a departure, forever).
  ASSERT_EQ(policy.may_start(2, 4.9), decision::start());
  policy.on_iteration_start(2, 4.9);
  policy.on_arrival(job_info::make(3, "newcomer", 5), 5);
  EXPECT_EQ(policy.may_start(3, 5), decision::wait_for_event());
  policy.on_iteration_end(2, report_of(4.9, 5.5, heavy), 5.5);
  EXPECT_EQ(policy.may_start(1, 5.5), decision::start());
  policy.on_iteration_start(1, 5.5);
  EXPECT_EQ(policy.may_start(3, 5.5), decision::wait_for_event());
  policy.on_iteration_end(1, report_of(5.5, 6, heavy), 6);
  policy.on_departure(2, 6);  // 200 held, 200 + 500 fits
  EXPECT_EQ(policy.may_start(3, 6), decision::start());
  policy.on_iteration_start(3, 6);
  policy.on_iteration_end(3, report_of(6, 7, heavy), 7);
  // Admitted once: later iterations are informed decisions, not admissions.
  policy.on_arrival(job_info::make(4, "late", 7), 7);
  EXPECT_EQ(policy.may_start(4, 7), decision::wait_for_event());
  EXPECT_EQ(policy.may_start(3, 7), decision::start());
}

/// Two jobs past profiling, both with the pyramid as their profile.
void profile_both(scrooge_policy& policy) {
  policy.on_arrival(job_info::make(1, "a", 0), 0);
  policy.on_arrival(job_info::make(2, "b", 0), 0);
  for (job_id job : {1u, 2u}) {
    const double t = job;
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    policy.on_iteration_start(job, t);
    policy.on_iteration_end(job, report_of(t, t + 1, pyramid), t + 1);
  }
}

TEST(Scrooge, InformedDecisionsShiftAnIterationByTheTimeShift) {
  scrooge_policy policy(650, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  profile_both(policy);
  ASSERT_EQ(policy.may_start(1, 10), decision::start());
  policy.on_iteration_start(1, 10);
  const auto verdict = policy.may_start(2, 10.5);  // a at its peak
  ASSERT_EQ(verdict.what, decision::verdict::wait_until);
  EXPECT_NEAR(verdict.until_s, 10.6, 1e-6);
  EXPECT_EQ(policy.may_start(2, 10.6 + 1e-6), decision::start());
  policy.on_iteration_start(2, 10.6 + 1e-6);
  EXPECT_EQ(policy.stats(2).delayed, 1);
  EXPECT_NEAR(policy.stats(2).total_shift_s, 0.1, 1e-5);
}

TEST(Scrooge, TheRampStartsLowAndReachesTheBudget) {
  scrooge_policy policy(1000, {.ramp_start = 0.5, .ramp_iterations = 4});
  profile_both(policy);
  EXPECT_EQ(policy.effective_budget(), 500u);
  for (int i = 0; i < 4; ++i) {
    const double t = 10.0 + 2 * i;
    ASSERT_EQ(policy.may_start(1, t), decision::start()) << i;  // alone: the ramp cannot block
    policy.on_iteration_start(1, t);
    policy.on_iteration_end(1, report_of(t, t + 1, pyramid), t + 1);
  }
  EXPECT_EQ(policy.effective_budget(), 1000u);
}

TEST(Scrooge, RegionBorrowsBeyondWhatLetsTheOthersFinishWait) {
  // Both profiled on the pyramid (100 held, peak 500); budget 700. a is at its peak (500), b
  // idle (100): b may start (a can finish first, then b), but b's forward pass may take only
  // what leaves a able to finish: a claims nothing more, so b's first region (to 200) fits,
  // its second would leave 700 - 500 - 300 = -100: refused until a returns.
  scrooge_policy policy(700, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  policy.on_arrival(job_info::make(1, "a", 0), 0);
  policy.on_arrival(job_info::make(2, "b", 0), 0);
  for (job_id job : {1u, 2u}) {
    ASSERT_TRUE(policy.try_reserve(job, 100));  // the build: what it holds between iterations
    const double t = job;
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    policy.on_iteration_start(job, t);
    policy.on_iteration_end(job, report_of(t, t + 1, pyramid), t + 1);
  }
  ASSERT_EQ(policy.may_start(1, 10), decision::start());
  policy.on_iteration_start(1, 10);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(policy.try_reserve(1, 100));  // a's forward pass
  EXPECT_NE(policy.may_start(2, 10.4), decision::wait_for_event());     // a can still finish
  policy.on_iteration_start(2, 10.4);
  EXPECT_TRUE(policy.try_reserve(2, 100));
  EXPECT_FALSE(policy.try_reserve(2, 100));  // 800 > 700
  EXPECT_TRUE(policy.others_will_move(2));   // a will return regions
  // The job asks again while it waits (region_waiter polls): one wait, not one per refusal.
  EXPECT_FALSE(policy.try_reserve(2, 100));
  EXPECT_FALSE(policy.try_reserve(2, 100));
  EXPECT_EQ(policy.stats(2).borrow_waits, 1);
  policy.returned(1, 100);
  EXPECT_TRUE(policy.try_reserve(2, 100));
  EXPECT_EQ(policy.stats(2).borrow_waits, 1);
  // A refusal after that grant is a second wait.
  EXPECT_FALSE(policy.try_reserve(2, 100));
  EXPECT_EQ(policy.stats(2).borrow_waits, 2);
}

TEST(Scrooge, AnIterationAboveItsPredictedPeakFallsBackToRunningAlone) {
  scrooge_policy policy(2000, {.ramp_start = 1, .ramp_iterations = 0, .fallback_threshold = 0.25});
  profile_both(policy);
  ASSERT_EQ(policy.may_start(1, 10), decision::start());
  policy.on_iteration_start(1, 10);
  // Slower only: no reason to stop sharing (the claims make slowness cost waiting, not memory).
  auto slow = pyramid;
  slow.duration_s = 2.0;
  policy.on_iteration_end(1, report_of(10, 12, slow), 12);
  EXPECT_EQ(policy.stats(1).fallbacks, 0);
  // 800 at its peak where 500 was predicted: the beefy-plus-lean case of Zico §5.3.
  const auto heavier = curve(100, {0.0, 0.1, 0.2, 0.3}, 175, {0.6, 0.7, 0.8, 0.9}, 175, 1.0);
  ASSERT_EQ(policy.may_start(1, 12), decision::start());
  policy.on_iteration_start(1, 12);
  policy.on_iteration_end(1, report_of(12, 13, heavier), 13);
  EXPECT_EQ(policy.stats(1).fallbacks, 1);
  ASSERT_EQ(policy.may_start(2, 13), decision::start());
  policy.on_iteration_start(2, 13);
  EXPECT_EQ(policy.may_start(1, 13.1), decision::wait_for_event());  // time-multiplexed now
  policy.on_iteration_end(2, report_of(13, 14, pyramid), 14);
  ASSERT_EQ(policy.may_start(1, 14), decision::start());
  policy.on_iteration_start(1, 14);
  EXPECT_EQ(policy.may_start(2, 14.1), decision::wait_for_event());  // 1 runs alone
  policy.on_iteration_end(1, report_of(14, 15, heavier), 15);  // as predicted: back to sharing
  ASSERT_EQ(policy.may_start(1, 15), decision::start());
  policy.on_iteration_start(1, 15);
  EXPECT_NE(policy.may_start(2, 15.1), decision::wait_for_event());
}

// c's iteration let go at 800 (its restart need) beside a's and b's 100 each, budget 900: it
// waits for them to leave while they can go on, as a and b each fit beside the rest's
// holdings. Once both hold 400 each between iterations, neither one's 500 fits beside the
// other's 400 and c's 100: c no longer waits for them (all three would wait for ever).
TEST(Scrooge, AJobThatRestartedWaitsForTheOthersOnlyWhileOneOfThemCanGoOn) {
  scrooge_policy policy(900, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  for (job_id job : {1u, 2u, 3u}) {
    policy.on_arrival(job_info::make(job, "j", 0), 0);
    ASSERT_TRUE(policy.try_reserve(job, 100));
    const double t = job;
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    policy.on_iteration_start(job, t);
    policy.on_iteration_end(job, report_of(t, t + 1, pyramid), t + 1);
  }
  ASSERT_EQ(policy.may_start(3, 10), decision::start());
  policy.on_iteration_start(3, 10);
  auto cut = report_of(10, 10.5, curve(100, {0.0}, 700, {}, 0, 0.5));  // reached 800
  cut.restarted = true;
  policy.on_iteration_end(3, cut, 10.5);
  EXPECT_EQ(policy.may_start(3, 10.5), decision::wait_for_event()) << "a and b can go on";
  for (job_id job : {1u, 2u}) ASSERT_TRUE(policy.try_reserve(job, 300));
  EXPECT_NE(policy.may_start(1, 10.6), decision::start());
  EXPECT_NE(policy.may_start(2, 10.6), decision::start());
  EXPECT_EQ(policy.may_start(3, 10.6), decision::start()) << "neither a nor b can go on";
}

TEST(Scrooge, StatisticsOutliveTheJobAndAddUp) {
  scrooge_policy policy(650, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  profile_both(policy);
  ASSERT_EQ(policy.may_start(1, 10), decision::start());
  policy.on_iteration_start(1, 10);
  ASSERT_EQ(policy.may_start(2, 10.5).what, decision::verdict::wait_until);
  policy.on_iteration_start(2, 10.6);
  policy.on_departure(2, 11);
  const auto named = [](const std::vector<policy_statistic>& statistics, const char* name) {
    const auto found = std::find_if(statistics.begin(), statistics.end(),
                                    [&](const auto& s) { return s.name == name; });
    return found == statistics.end() ? -1.0 : found->value;
  };
  const auto departed = policy.job_statistics(2);
  EXPECT_EQ(named(departed, "iterations"), 1.0);  // its profiling iteration
  EXPECT_EQ(named(departed, "delayed"), 1.0);
  EXPECT_NEAR(named(departed, "total_shift_s"), 0.1, 1e-9);
  EXPECT_NEAR(named(departed, "mean_shift_s"), 0.1, 1e-9);
  EXPECT_EQ(named(departed, "shared_starts"), 1.0);
  const auto system = policy.system_statistics();
  EXPECT_EQ(named(system, "iterations"), 2.0);
  EXPECT_EQ(named(system, "delayed"), 1.0);
  EXPECT_EQ(named(system, "effective_budget_bytes"), 650.0);
}

TEST(Scrooge, AJobWhosePeakExceedsTheBudgetIsRefusedWithTheNumbers) {
  scrooge_policy policy(400, {.ramp_start = 1, .ramp_iterations = 0});
  policy.on_arrival(job_info::make(1, "huge", 0), 0);
  ASSERT_EQ(policy.may_start(1, 0), decision::start());
  policy.on_iteration_start(1, 0);
  policy.on_iteration_end(1, report_of(0, 1, pyramid), 1);  // peak 500
  try {
    static_cast<void>(policy.may_start(1, 1));
    FAIL() << "no error";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("job 'huge' holds up to 500 B at its peak"),
              std::string::npos)
        << e.what();
  }
}

// --- footprint variants (chooses_footprint.hpp) ------------------------------------------------

/// The pyramid under a plan: half the regions at its peak (300), at `length` seconds.
usage_curve lean(double length) {
  return curve(100, {0.0, 0.1}, 100, {0.8 * length, 0.9 * length}, 100, length);
}

/// Two jobs offered the pyramid plain and `planned`, past profiling (both ran plain alone).
void profile_both_with_plans(scrooge_policy& policy, const usage_curve& planned) {
  for (job_id job : {1u, 2u}) {
    policy.on_arrival(job_info::make(job, job == 1 ? "a" : "b", 0), 0);
    policy.offer_variants(job, {{"none", pyramid, 1.0}, {"lean", planned, planned.duration_s}});
  }
  for (job_id job : {1u, 2u}) {
    const double t = job;
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    EXPECT_EQ(policy.chosen_variant(job), 0u);  // the plain iteration fits alone
    policy.on_iteration_start(job, t);
    policy.on_iteration_end(job, report_of(t, t + 1, pyramid), t + 1);
  }
}

/// a runs plain from 10; b asks at 10.35, beside a at its peak.
void b_asks_beside_a(scrooge_policy& policy) {
  ASSERT_EQ(policy.may_start(1, 10), decision::start());
  EXPECT_EQ(policy.chosen_variant(1), 0u);
  policy.on_iteration_start(1, 10);
}

TEST(ScroogeWithPlans, APlanThatCostsLessThanTheWaitRunsBesideTheOtherJob) {
  // Budget 850: beside a at its peak (500, its returns 0.25 s from now and every 0.1 s after)
  // the plain b must start 0.05 s later, so that its third take (to 400) meets a's first
  // return; under the plan (300 at its peak) it fits now, for 0.02 s more.
  scrooge_policy policy(850, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  const auto planned = lean(1.02);
  profile_both_with_plans(policy, planned);
  b_asks_beside_a(policy);
  // The plan is the best, but it never ran: b waits for a's end to try it alone (a trial), and
  // a waits for that trial rather than start again.
  EXPECT_EQ(policy.may_start(2, 10.35), decision::wait_for_event());
  policy.on_iteration_end(1, report_of(10, 11, pyramid), 11);
  EXPECT_EQ(policy.may_start(1, 11), decision::wait_for_event());
  ASSERT_EQ(policy.may_start(2, 11), decision::start());
  EXPECT_EQ(policy.chosen_variant(2), 1u);
  policy.on_iteration_start(2, 11);
  EXPECT_EQ(policy.may_start(1, 11.1), decision::wait_for_event());  // the trial runs alone
  policy.on_iteration_end(2, report_of(11, 12.02, planned), 12.02);
  // Measured now: the same moment as before finds b under its plan beside a, at once.
  ASSERT_EQ(policy.may_start(1, 20), decision::start());
  policy.on_iteration_start(1, 20);
  ASSERT_EQ(policy.may_start(2, 20.35), decision::start());
  EXPECT_EQ(policy.chosen_variant(2), 1u);
  policy.on_iteration_start(2, 20.35);
  EXPECT_EQ(policy.stats(2).planned, 2);  // its trial and this one
  EXPECT_NEAR(policy.stats(2).plan_extra_s, 0.04, 1e-9);
  EXPECT_EQ(policy.stats(2).shared_starts, 1);
}

TEST(ScroogeWithPlans, WeighingWaitsAShortWaitBesideAJobThatFillsTheDeviceCostsLessThanAPlan) {
  // As above, but weighing, and the two jobs' plain iterations side by side took twice as long
  // as alone: a wait beside a leaves nothing of the device idle, so b waits rather than pay the
  // plan's extra time.
  scrooge_policy policy(
      850, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0, .weigh_waiting = 1});
  profile_both_with_plans(policy, lean(1.02));
  const usage_curve stretched =
      curve(100, {0.0, 0.2, 0.4, 0.6}, 100, {1.2, 1.4, 1.6, 1.8}, 100, 2.0);
  for (job_id job : {1u, 2u}) policy.on_iteration_start(job, 3);
  for (job_id job : {1u, 2u}) policy.on_iteration_end(job, report_of(3, 5, stretched), 5);
  ASSERT_NEAR(policy.stats(2).stretch, 2.0, 1e-9);
  b_asks_beside_a(policy);
  const auto verdict = policy.may_start(2, 10.35);
  EXPECT_EQ(verdict.what, decision::verdict::wait_until);
  EXPECT_EQ(policy.chosen_variant(2), 0u);
  EXPECT_EQ(policy.stats(2).planned, 0);
}

TEST(ScroogeWithPlans, APlanThatCostsMoreThanTheWaitIsNotTaken) {
  // The same, but the plan doubles the iteration: waiting 0.05 s is cheaper.
  scrooge_policy policy(850, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  profile_both_with_plans(policy, lean(2.0));
  b_asks_beside_a(policy);
  const auto verdict = policy.may_start(2, 10.35);
  EXPECT_EQ(verdict.what, decision::verdict::wait_until);
  EXPECT_NEAR(verdict.until_s, 10.4, 1e-6);
  EXPECT_EQ(policy.chosen_variant(2), 0u);
  EXPECT_EQ(policy.stats(2).planned, 0);
}

TEST(ScroogeWithPlans, APlainIterationThatSwappedOnDemandCostsWhatItTook) {
  // As above, the plan doubles the iteration; but b's last plain iteration did not fit beside
  // what a held and swapped on demand (a real job's passive swapping), taking 3 s. Waiting
  // 0.05 s for such an iteration now costs more than the plan: b takes the plan.
  scrooge_policy policy(850, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  profile_both_with_plans(policy, lean(2.0));
  ASSERT_EQ(policy.may_start(2, 5), decision::start());
  EXPECT_EQ(policy.chosen_variant(2), 0u);
  policy.on_iteration_start(2, 5);
  auto swapped = report_of(5, 8, pyramid);
  swapped.swapped_on_demand_bytes = 100;
  policy.on_iteration_end(2, swapped, 8);
  b_asks_beside_a(policy);
  EXPECT_EQ(policy.may_start(2, 10.35), decision::wait_for_event());  // the plan's trial, alone
  policy.on_iteration_end(1, report_of(10, 11, pyramid), 11);
  ASSERT_EQ(policy.may_start(2, 11), decision::start());
  EXPECT_EQ(policy.chosen_variant(2), 1u);
  policy.on_iteration_start(2, 11);
  // Its extra time is still counted against the plain iteration as offered (2.0 - 1.0 s).
  EXPECT_NEAR(policy.stats(2).plan_extra_s, 1.0, 1e-9);
}

/// Budget 600. Plain: 500 for the whole iteration (1 s), 100 between iterations. The plan: 250,
/// for 0.1 s more. Beside a plain iteration nothing of the other job fits (500 + 250), so it
/// waits 1 s; under both plans they fit at once (500) for 0.2 s of extra time in all.
const usage_curve plain_500 = curve(100, {0.0}, 400, {1.0}, 400, 1.0);
const usage_curve planned_250 = curve(100, {0.0}, 150, {1.1}, 150, 1.1);

/// Jobs a and b offered plain_500 and planned_250 under a scrooge that weighs waits, taken past
/// their profiles (plain, alone) and their plans' trials (alone, measured), from time `t` on.
void weighing_pair_past_trials(scrooge_policy& policy, double& t) {
  for (job_id job : {1u, 2u}) {
    policy.on_arrival(job_info::make(job, job == 1 ? "a" : "b", 0), 0);
    policy.offer_variants(job, {{"none", plain_500, 1.0}, {"lean", planned_250, 1.1}});
  }
  for (job_id job : {1u, 2u}) {  // profiling, alone and plain
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    EXPECT_EQ(policy.chosen_variant(job), 0u);
    policy.on_iteration_start(job, t);
    policy.on_iteration_end(job, report_of(t, t + 1, plain_500), t + 1);
    t += 1;
  }
  for (job_id job : {1u, 2u}) {  // each plan's first iteration: a trial, alone
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    ASSERT_EQ(policy.chosen_variant(job), 1u) << "job " << job;
    policy.on_iteration_start(job, t);
    EXPECT_EQ(policy.may_start(3 - job, t), decision::wait_for_event());
    policy.on_iteration_end(job, report_of(t, t + 1.1, planned_250), t + 1.1);
    t += 1.1;
  }
}

TEST(ScroogeWithPlans, WeighingTheWaitingJobAJobPlansWhereItsPlainIterationWouldLeaveItNoRoom) {
  // The job that asks first prices the other's wait and plans, though its own plain iteration
  // could start now and is the quicker alone.
  scrooge_policy policy(
      600, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0, .weigh_waiting = 1});
  double t = 0;
  ASSERT_NO_FATAL_FAILURE(weighing_pair_past_trials(policy, t));
  // Both plans measured: side by side, at once.
  ASSERT_EQ(policy.may_start(1, t), decision::start());
  EXPECT_EQ(policy.chosen_variant(1), 1u);
  policy.on_iteration_start(1, t);
  ASSERT_EQ(policy.may_start(2, t), decision::start());
  EXPECT_EQ(policy.chosen_variant(2), 1u);
  policy.on_iteration_start(2, t);
  EXPECT_EQ(policy.stats(2).shared_starts, 1);
  EXPECT_EQ(policy.stats(1).planned + policy.stats(2).planned, 4);
}

TEST(ScroogeWithPlans, WeighingTheWaitingJobCountsNothingWhereSideBySideIterationsTookTwiceAsLong) {
  // The same jobs, but their plans side by side each took 2.2 s, twice their 1.1 s alone: the
  // device had no room for both, so starting them together gains nothing and a delay of the
  // other job costs nothing the device could have done. The quicker plain iteration wins again.
  scrooge_policy policy(
      600, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0, .weigh_waiting = 1});
  const usage_curve stretched = curve(100, {0.0}, 150, {2.2}, 150, 2.2);
  double t = 0;
  ASSERT_NO_FATAL_FAILURE(weighing_pair_past_trials(policy, t));
  EXPECT_EQ(policy.stats(1).stretch, 0);  // nothing ran beside it yet
  for (job_id job : {1u, 2u}) {  // side by side, as the weighing chose while stretch was unknown
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    ASSERT_EQ(policy.chosen_variant(job), 1u);
    policy.on_iteration_start(job, t);
  }
  for (job_id job : {1u, 2u})
    policy.on_iteration_end(job, report_of(t, t + 2.2, stretched), t + 2.2);
  t += 2.2;
  EXPECT_NEAR(policy.stats(1).stretch, 2.0, 1e-9);
  EXPECT_NEAR(policy.stats(2).stretch, 2.0, 1e-9);
  ASSERT_EQ(policy.may_start(1, t), decision::start());
  EXPECT_EQ(policy.chosen_variant(1), 0u);
  policy.on_iteration_start(1, t);
  const auto verdict = policy.may_start(2, t);
  EXPECT_EQ(verdict.what, decision::verdict::wait_until);
  EXPECT_NEAR(verdict.until_s, t + 1.0, 1e-6);
}

TEST(ScroogeWithPlans, WithoutWeighingTheWaitingJobTheQuickerPlainIterationStartsAndTheOtherWaits) {
  // The same jobs under the default: each start prices its own delay and extra time only.
  scrooge_policy policy(600, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  for (job_id job : {1u, 2u}) {
    policy.on_arrival(job_info::make(job, job == 1 ? "a" : "b", 0), 0);
    policy.offer_variants(job, {{"none", plain_500, 1.0}, {"lean", planned_250, 1.1}});
  }
  for (double t : {0.0, 1.0, 2.0}) {
    const job_id job = t == 1.0 ? 2 : 1;
    ASSERT_EQ(policy.may_start(job, t), decision::start());
    EXPECT_EQ(policy.chosen_variant(job), 0u);
    policy.on_iteration_start(job, t);
    if (t == 2.0) {  // b waits for a's plain iteration to end: no plan of it fits beside
      const auto verdict = policy.may_start(2, t);
      EXPECT_EQ(verdict.what, decision::verdict::wait_until);
      EXPECT_NEAR(verdict.until_s, 3.0, 1e-6);
      EXPECT_EQ(policy.chosen_variant(2), 0u);
    }
    policy.on_iteration_end(job, report_of(t, t + 1, plain_500), t + 1);
  }
  EXPECT_EQ(policy.stats(1).planned + policy.stats(2).planned, 0);
}

TEST(ScroogeWithPlans, WeighingTheWaitingJobAJobAloneKeepsItsPlainIteration) {
  // The same job with nobody else present: no wait to price, the quicker plain iteration runs.
  scrooge_policy policy(
      600, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0, .weigh_waiting = 1});
  policy.on_arrival(job_info::make(1, "a", 0), 0);
  policy.offer_variants(1, {{"none", plain_500, 1.0}, {"lean", planned_250, 1.1}});
  for (double t : {0.0, 1.0, 2.0}) {
    ASSERT_EQ(policy.may_start(1, t), decision::start());
    EXPECT_EQ(policy.chosen_variant(1), 0u);
    policy.on_iteration_start(1, t);
    policy.on_iteration_end(1, report_of(t, t + 1, plain_500), t + 1);
  }
  EXPECT_EQ(policy.stats(1).planned, 0);
}

TEST(ScroogeWithPlans, AJobTooLargeForTheBudgetRunsUnderAPlanInsteadOfBeingRefused) {
  scrooge_policy policy(400, {.ramp_start = 1, .ramp_iterations = 0});
  policy.on_arrival(job_info::make(1, "huge", 0), 0);
  policy.offer_variants(1, {{"none", pyramid, 1.0}, {"lean", lean(1.2), 1.2}});
  ASSERT_EQ(policy.may_start(1, 0), decision::start());
  EXPECT_EQ(policy.chosen_variant(1), 1u);  // the plain peak (500) cannot fit 400
  policy.on_iteration_start(1, 0);
  policy.on_iteration_end(1, report_of(0, 1.2, lean(1.2)), 1.2);
  ASSERT_EQ(policy.may_start(1, 1.2), decision::start());  // informed now: not refused
  EXPECT_EQ(policy.chosen_variant(1), 1u);
  // Without the offer the same job is refused (AJobWhosePeakExceedsTheBudgetIsRefused...).
}

TEST(ScroogeWithPlans, ANewcomerNotBuiltYetHoldsNothingInAResidentsTimeShift) {
  // a is resident (100 between iterations, 500 at its peak). b arrives with plans whose curves
  // predict 200 of persistent memory and a peak of 600: 100 + 600 does not fit 650, so b is not
  // admitted and waits for a departure. a must still run: b holds nothing until it is built. (It
  // once counted b's predicted 200, found 200 + 500 over 650 with nobody running, and every job
  // of the Salus trace at 8 GiB waited for an event that could not come.)
  scrooge_policy policy(650, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  policy.on_arrival(job_info::make(1, "a", 0), 0);
  ASSERT_EQ(policy.may_start(1, 0), decision::start());
  policy.on_iteration_start(1, 0);
  policy.on_iteration_end(1, report_of(0, 1, pyramid), 1);
  const usage_curve big = curve(200, {0.0, 0.1}, 200, {0.8, 0.9}, 200, 1.0);
  policy.on_arrival(job_info::make(2, "b", 1), 1);
  policy.offer_variants(2, {{"none", big, 1.0}, {"lean", big, 1.5}});
  EXPECT_EQ(policy.may_start(2, 1), decision::wait_for_event());  // not admitted
  EXPECT_EQ(policy.may_start(1, 1), decision::start());
}

TEST(ScroogeWithPlans, WithoutAnOfferEveryIterationRunsPlain) {
  scrooge_policy policy(850, {.ramp_start = 1, .ramp_iterations = 0, .claim_margin = 0});
  profile_both(policy);
  ASSERT_EQ(policy.may_start(1, 10), decision::start());
  policy.on_iteration_start(1, 10);
  EXPECT_EQ(policy.may_start(2, 10.35).what, decision::verdict::wait_until);
  EXPECT_EQ(policy.chosen_variant(2), 0u);
}

TEST(Scrooge, BadOptionsAreRefused) {
  EXPECT_THROW(scrooge_policy(1000, {.ramp_start = 1.5}), config_error);
  EXPECT_THROW(scrooge_policy(1000, {.ramp_start = 0}), config_error);
  EXPECT_THROW(scrooge_policy(1000, {.ramp_iterations = -1}), config_error);
  EXPECT_THROW(scrooge_policy(1000, {.fallback_threshold = 0}), config_error);
}

}  // namespace
}  // namespace tandem::schedule
