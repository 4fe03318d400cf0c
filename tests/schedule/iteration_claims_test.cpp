// The banker's claims behind scrooge's region borrows: hand-made cases, and randomized runs of
// co-located iterations stepping through their curves in random interleavings, which must keep
// the budget and never leave every job waiting (Note [Waiting for regions cannot deadlock]).

#include "tandem/schedule/iteration_claims.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace tandem::schedule {
namespace {

/// `held` between iterations; `regions` of `size` taken one by one, then returned one by one.
std::shared_ptr<const indexed_curve> pyramid(std::size_t held, int regions, std::int64_t size) {
  usage_curve c;
  c.held_at_start = held;
  c.duration_s = 1;
  for (int i = 0; i < regions; ++i) c.steps.push_back({0.01 * i, size});
  for (int i = 0; i < regions; ++i) c.steps.push_back({0.5 + 0.01 * i, -size});
  return std::make_shared<const indexed_curve>(std::move(c));
}

TEST(IterationClaims, TwoForwardPassesThatWouldDeadlockAreSerializedAtTheBorrow) {
  // Budget 800; both hold 100 between iterations and peak at 500: both cannot reach 400.
  iteration_claims claims(800);
  const auto curve = pyramid(100, 4, 100);
  for (job_id job : {1u, 2u}) ASSERT_TRUE(claims.try_reserve(job, 100));
  claims.start(1, curve);
  EXPECT_TRUE(claims.admits_start(2, *curve));
  claims.start(2, curve);
  ASSERT_TRUE(claims.try_reserve(1, 100));
  ASSERT_TRUE(claims.try_reserve(2, 100));
  ASSERT_TRUE(claims.try_reserve(1, 100));
  ASSERT_TRUE(claims.try_reserve(2, 100));   // 300 + 300: either can still finish first
  ASSERT_TRUE(claims.try_reserve(2, 100));   // 300 + 400: b finishes first, then a
  EXPECT_FALSE(claims.try_reserve(1, 100));  // 400 + 400: neither could reach 500
  EXPECT_TRUE(claims.others_will_move(1));   // b moves on
  EXPECT_EQ(claims.refusals(1), 1);
  ASSERT_TRUE(claims.try_reserve(2, 100));  // b at its peak
  for (int i = 0; i < 4; ++i) claims.returned(2, 100);
  claims.end(2);
  EXPECT_TRUE(claims.try_reserve(1, 100));
  EXPECT_TRUE(claims.try_reserve(1, 100));
  EXPECT_EQ(claims.total_held(), 600u);
  EXPECT_FALSE(claims.exceeded_claim(1));
}

TEST(IterationClaims, AMarginOfOneBorrowLeavesRoomForAPeakOneRegionHigherThanPredicted) {
  // Regression: two real ResNet-20 at 28 MiB lost a job in about 1 run of 10. One iteration
  // peaked a region above its curve while the other had grown into exactly what the curve
  // promised would be left: both waited for the other, and one had to fail.
  const auto curve = pyramid(100, 4, 100);  // 100 between iterations, peak 500
  for (const std::size_t margin : {0u, 1u}) {
    iteration_claims claims(900, margin);
    for (job_id job : {1u, 2u}) ASSERT_TRUE(claims.try_reserve(job, 100));
    claims.start(1, curve);
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(claims.try_reserve(1, 100));  // a at its peak, 500
    claims.start(2, curve);
    ASSERT_TRUE(claims.try_reserve(2, 100));
    ASSERT_TRUE(claims.try_reserve(2, 100));  // 500 + 300
    // Exact claims let b take the last 100 (a predicted to need nothing more); with the margin
    // a may still need a borrow, so b waits for a's returns.
    EXPECT_EQ(claims.try_reserve(2, 100), margin == 0) << "margin " << margin;
    if (margin == 0) continue;
    EXPECT_TRUE(claims.try_reserve(1, 100));  // a's iteration a region larger than its curve
    EXPECT_TRUE(claims.others_will_move(2));
  }
}

TEST(IterationClaims, AJobAloneWhoseRequestExceedsTheBudgetIsToldNobodyWillMove) {
  iteration_claims claims(300);
  claims.start(1, pyramid(0, 4, 100));  // predicts 400: more than the budget
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(claims.try_reserve(1, 100));  // alone: let through
  EXPECT_FALSE(claims.try_reserve(1, 100));
  EXPECT_FALSE(claims.others_will_move(1));
}

TEST(IterationClaims, WhenEveryIterationWaitsTheFirstWhoseRequestFitsGoesThrough) {
  // Both at 200 of a predicted 400 when the budget drops to 500: no order finishes now.
  iteration_claims claims(1000);
  const auto curve = pyramid(0, 4, 100);
  claims.start(1, curve);
  claims.start(2, curve);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(claims.try_reserve(1, 100));
    ASSERT_TRUE(claims.try_reserve(2, 100));
  }
  claims.set_budget(500);
  EXPECT_FALSE(claims.try_reserve(2, 100));
  EXPECT_TRUE(claims.others_will_move(2));  // a can still move
  // b waits and cannot go on: a, the first to start, goes through.
  EXPECT_TRUE(claims.try_reserve(1, 100));
  EXPECT_EQ(claims.insisted(), 1);
  // Both want more and nothing fits the budget: nobody will move, so one must let go (the
  // policy driver chooses which).
  EXPECT_FALSE(claims.try_reserve(1, 100));
  EXPECT_FALSE(claims.others_will_move(1));
  EXPECT_FALSE(claims.others_will_move(2));
  EXPECT_LE(claims.total_held(), 500u);
}

/// A job's run in the randomized test: its curve's region steps, one at a time.
struct stepping_job {
  std::shared_ptr<const indexed_curve> curve;
  std::size_t next = 0;
  bool running = false;
  int iterations_left = 3;
  std::int64_t extra = 0;  // bytes it takes beyond its curve this iteration (a misprediction)
  std::optional<std::uint64_t> waiting_since;  // refused and not granted since: when
};

/// The running job that began to wait last, as policy_driver::memory_wait picks it.
job_id latest_to_wait(const std::vector<stepping_job>& jobs) {
  job_id latest = 0;
  std::optional<std::uint64_t> since;
  for (job_id j = 0; j < jobs.size(); ++j) {
    const auto& job = jobs[j];
    if (job.running && job.waiting_since && (!since || *job.waiting_since > *since)) {
      latest = j;
      since = job.waiting_since;
    }
  }
  return latest;
}

/// Random interleavings of jobs stepping through their curves under the claims. When nobody
/// will move, the latest to wait lets go and restarts its iteration, as the policy driver
/// decides. Returns the number of restarts; fails the test on a broken budget, a stuck state
/// or a job that does not finish.
int run_random(std::mt19937_64& rng, bool mispredict, int trial) {
  std::uniform_int_distribution<int> count(2, 5);
  const int n = count(rng);
  const std::int64_t region = 64;
  std::vector<stepping_job> jobs(static_cast<std::size_t>(n));
  std::size_t persistent = 0;
  std::size_t largest = 0;
  for (auto& job : jobs) {
    const auto held = static_cast<std::size_t>(region * static_cast<std::int64_t>(rng() % 3));
    job.curve = pyramid(held, 1 + static_cast<int>(rng() % 6), region);
    persistent += held;
    largest = std::max(largest, job.curve->peak - held);
  }
  const std::size_t budget =
      persistent + largest + (mispredict ? 2 * region : 0) +
      static_cast<std::size_t>(region * static_cast<std::int64_t>(rng() % 8));
  iteration_claims claims(budget);
  for (job_id j = 0; j < jobs.size(); ++j) {
    EXPECT_TRUE(claims.try_reserve(j, jobs[j].curve->curve.held_at_start)) << trial;
  }
  int restarts = 0;
  std::uint64_t waits = 0;
  int still_rounds = 0;  // rounds in a row in which nobody moved
  for (int rounds = 0; rounds < 100000; ++rounds) {
    bool any_left = false;
    bool moved = false;
    std::vector<job_id> order(jobs.size());
    for (job_id j = 0; j < order.size(); ++j) order[j] = j;
    std::shuffle(order.begin(), order.end(), rng);
    for (const auto j : order) {
      auto& job = jobs[j];
      if (job.iterations_left == 0) continue;
      any_left = true;
      if (!job.running) {
        if (!claims.admits_start(j, *job.curve)) continue;
        claims.start(j, job.curve);
        job.running = true;
        job.next = 0;
        job.extra = mispredict && rng() % 4 == 0 ? region : 0;
        moved = true;
        continue;
      }
      const auto& steps = job.curve->curve.steps;
      if (job.next == steps.size()) {
        if (job.extra < 0) {  // give back what it took beyond the curve
          claims.returned(j, static_cast<std::size_t>(-job.extra));
          job.extra = 0;
        }
        claims.end(j);
        job.running = false;
        --job.iterations_left;
        moved = true;
        continue;
      }
      // The extra region comes right after the curve's peak.
      const bool at_peak = job.next == steps.size() / 2;
      const std::int64_t delta = at_peak && job.extra > 0 ? job.extra : steps[job.next].delta;
      if (delta > 0) {
        if (!claims.try_reserve(j, static_cast<std::size_t>(delta))) {
          if (!job.waiting_since) job.waiting_since = waits++;
          if (!claims.others_will_move(j) && latest_to_wait(jobs) == j) {
            ++restarts;  // lets go: everything it took this iteration goes back
            claims.returned(j, claims.held(j) - job.curve->curve.held_at_start);
            claims.end(j);
            job.running = false;
            job.waiting_since.reset();
            moved = true;
          }
          continue;
        }
        job.waiting_since.reset();
        if (at_peak && job.extra > 0) {
          job.extra = -job.extra;
          moved = true;
          continue;
        }
      } else {
        claims.returned(j, static_cast<std::size_t>(-delta));
      }
      ++job.next;
      moved = true;
      EXPECT_LE(claims.total_held(), budget) << "trial " << trial;
    }
    if (!any_left) return restarts;
    // A round notes who waits; only a second round without a move sees every answer with
    // those notes in place.
    still_rounds = moved ? 0 : still_rounds + 1;
    if (still_rounds == 2) {
      ADD_FAILURE() << "trial " << trial << ": every job waits and none can move";
      return restarts;
    }
  }
  ADD_FAILURE() << "trial " << trial << ": did not finish";
  return restarts;
}

TEST(IterationClaims, RandomInterleavingsWithinTheirClaimsKeepTheBudgetAndAllFinish) {
  std::mt19937_64 rng(20261125);
  for (int trial = 0; trial < 500; ++trial) {
    EXPECT_EQ(run_random(rng, false, trial), 0) << "trial " << trial << ": a job had to let go";
  }
}

TEST(IterationClaims, RandomMispredictionsKeepTheBudgetNeverStickAndEveryJobFinishes) {
  std::mt19937_64 rng(7);
  int restarts = 0;
  for (int trial = 0; trial < 500; ++trial) restarts += run_random(rng, true, trial);
  // Restarts are allowed (only when no waiting request fits the budget); the checks that
  // matter are inside run_random: the budget held, nobody stuck, every iteration run.
  RecordProperty("restarts", restarts);
  EXPECT_GT(restarts, 0) << "the mispredictions never made iterations wait for each other";
}

}  // namespace
}  // namespace tandem::schedule
