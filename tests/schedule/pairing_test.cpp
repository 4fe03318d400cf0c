// The pairing rule and rounds laid out with it, against schedules worked out by hand (MiB).

#include "tandem/schedule/pairing.hpp"

#include <gtest/gtest.h>

#include <random>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/counter_barrier.hpp"

namespace {

using tandem::MiB;
using namespace tandem::schedule;

constexpr auto mib = static_cast<std::int64_t>(MiB);
constexpr auto alloc = group_kind::allocating;
constexpr auto frees = group_kind::freeing;

/// `angs` allocating groups of `step` MiB each, then as many freeing ones returning them.
pairing_job job(job_id id, std::size_t idle_mib, std::size_t angs, std::size_t step_mib) {
  pairing_job j;
  j.id = id;
  j.held = idle_mib * MiB;
  const auto bytes = static_cast<std::int64_t>(step_mib * MiB);
  for (std::size_t i = 0; i < angs; ++i) j.remaining.push_back({step_mib * MiB, bytes, alloc});
  for (std::size_t i = 0; i < angs; ++i) j.remaining.push_back({0, -bytes, frees});
  return j;
}

using plan = std::vector<std::vector<planned_group>>;

TEST(Pairing, TwoJobsOnATightBudgetPairTheLeadersFreeingGroupsWithTheNextJobsAllocatingOnes) {
  // Each job: 100 MiB idle, 4 ANGs of 10 MiB (peak 140), 4 DNGs. Budget 250: after both idle
  // holdings there is room for one job's peak and one more group.
  const plan expected{{{0, 0}, {1, 0}},  // room for one early group of job 1 (Algorithm 1's p)
                      {{0, 1}},
                      {{0, 2}},
                      {{0, 3}},
                      {{0, 4}},  // job 0's peak: job 1 must
                                 // wait until a DNG has
                                 // finished
                      {{0, 5}, {1, 1}},
                      {{0, 6}, {1, 2}},
                      {{0, 7}, {1, 3}},
                      {{1, 4}},
                      {{1, 5}},
                      {{1, 6}},
                      {{1, 7}}};
  EXPECT_EQ(plan_round({job(0, 100, 4, 10), job(1, 100, 4, 10)}, 250 * MiB, 2), expected);
}

TEST(Pairing, TwoJobsWithRoomForBothPeaksRunSideBySide) {
  const plan expected{{{0, 0}, {1, 0}}, {{0, 1}, {1, 1}}, {{0, 2}, {1, 2}}, {{0, 3}, {1, 3}}};
  EXPECT_EQ(plan_round({job(0, 10, 2, 10), job(1, 10, 2, 10)}, 60 * MiB, 2), expected);
}

TEST(Pairing, ThreeJobsOnThreeStreamsAdmitTheThirdOnlyWhenItsGroupFitsBesideTheOthers) {
  // Each job: 2 ANGs of 10 MiB, 2 DNGs, nothing idle; budget 50 MiB.
  const plan expected{{{0, 0}, {1, 0}, {2, 0}}, {{0, 1}, {1, 1}},  // job 2's next ANG would make 60
                      {{0, 2}, {1, 2}},  // frees count after the barrier: still 60 with it
                      {{0, 3}, {1, 3}, {2, 1}}, {{2, 2}},         {{2, 3}}};
  EXPECT_EQ(plan_round({job(0, 0, 2, 10), job(1, 0, 2, 10), job(2, 0, 2, 10)}, 50 * MiB, 3),
            expected);
}

TEST(Pairing, ThreeJobsOnTwoStreamsFinishTheLeadersBeforeStartingTheThird) {
  const plan expected{{{0, 0}, {1, 0}}, {{0, 1}, {1, 1}}, {{0, 2}, {1, 2}}, {{0, 3}, {1, 3}},
                      {{2, 0}},         {{2, 1}},         {{2, 2}},         {{2, 3}}};
  EXPECT_EQ(plan_round({job(0, 0, 2, 10), job(1, 0, 2, 10), job(2, 0, 2, 10)}, 40 * MiB, 2),
            expected);
}

TEST(Pairing, FourJobsOnFourStreamsKeepEachStepWithinTheBudget) {
  // One ANG and one DNG of 10 MiB each; budget 30: three ANGs fit, the fourth waits until
  // the first three have freed (after their DNG step, not during it).
  const plan expected{{{0, 0}, {1, 0}, {2, 0}}, {{0, 1}, {1, 1}, {2, 1}}, {{3, 0}}, {{3, 1}}};
  EXPECT_EQ(plan_round({job(0, 0, 1, 10), job(1, 0, 1, 10), job(2, 0, 1, 10), job(3, 0, 1, 10)},
                       30 * MiB, 4),
            expected);
}

TEST(Pairing, FourJobsOnTwoStreamsPipelinePairsOfJobs) {
  const plan expected{{{0, 0}, {1, 0}}, {{0, 1}, {1, 1}}, {{2, 0}, {3, 0}}, {{2, 1}, {3, 1}}};
  EXPECT_EQ(plan_round({job(0, 0, 1, 10), job(1, 0, 1, 10), job(2, 0, 1, 10), job(3, 0, 1, 10)},
                       30 * MiB, 2),
            expected);
}

TEST(Pairing, AJobWithMoreGroupsLeadsAtTheStart) {
  // Algorithm 1 sorts jobs by their groups: the longer job starts first when only one fits.
  const plan round = plan_round({job(0, 0, 1, 10), job(1, 0, 2, 10)}, 20 * MiB, 2);
  ASSERT_FALSE(round.empty());
  EXPECT_EQ(round.front().front(), (planned_group{1, 0}));
}

TEST(Pairing, NeedToFinishIsTheHighestPointStillAhead) {
  const std::vector<group_need> remaining{
      {5 * MiB, 4 * mib, alloc}, {3 * MiB, 3 * mib, alloc}, {2 * MiB, -7 * mib, frees}};
  EXPECT_EQ(need_to_finish(remaining), 9 * MiB);  // 4 + 3 + 2 during the last group
  EXPECT_EQ(need_to_finish({}), 0u);
}

TEST(Pairing, ABusyJobCountsWithWhatItHoldsButIsNeverChosen) {
  auto busy = job(0, 30, 1, 10);
  busy.ready = false;
  auto waiting = job(1, 0, 1, 10);
  waiting.ready = true;
  const std::vector<pairing_job> jobs{busy, waiting};
  EXPECT_EQ(choose_step(jobs, 40 * MiB, 2), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(choose_step(jobs, 35 * MiB, 2).empty());
}

/// A job at `groups_done` of `remaining`, holding `held_mib` now and `idle_mib` between
/// iterations, ready at its next group, with `turn`.
pairing_job at(job_id id, std::size_t held_mib, std::size_t idle_mib, std::size_t groups_done,
               std::vector<group_need> remaining, std::size_t turn) {
  pairing_job j;
  j.id = id;
  j.held = held_mib * MiB;
  j.idle = idle_mib * MiB;
  j.groups_done = groups_done;
  j.remaining = std::move(remaining);
  j.ready = true;
  j.turn = turn;
  return j;
}

TEST(Pairing, AJobWaitingAtItsStartIsNotOvertakenByALaterTurnStartingAnIteration) {
  // Budget 100. Job 0 (turn 1) waits at its start for 50 MiB: beside the 40 job 1 holds
  // mid-iteration it does not fit, beside the others' idle 10 + 10 it would. Job 2 (turn 5)
  // could start a 10 MiB group now, and would keep the room job 0 waits for in use: with three
  // jobs out of phase, the big one would never start.
  const std::vector<pairing_job> jobs{
      at(0, 10, 10, 0, {{50 * MiB, 0, alloc}}, 1), at(1, 40, 10, 1, {{0, -30 * mib, frees}}, 4),
      at(2, 10, 10, 0, {{10 * MiB, 10 * mib, alloc}, {0, -10 * mib, frees}}, 5)};
  EXPECT_EQ(choose_step(jobs, 100 * MiB, 3), (std::vector<std::size_t>{1}));
  // Once job 1 has given its room back, job 0 starts, and job 2 beside it where it fits.
  auto next = jobs;
  next[1].held = 10 * MiB;
  next[1].remaining.clear();
  next[1].groups_done = 0;
  EXPECT_EQ(choose_step(next, 100 * MiB, 3), (std::vector<std::size_t>{0, 2}));
  // A waiting job that would not fit even between the others' iterations holds nobody up: it
  // waits for a departure, not for them.
  auto hopeless = jobs;
  hopeless[0].remaining = {{85 * MiB, 0, alloc}};
  EXPECT_EQ(choose_step(hopeless, 100 * MiB, 3), (std::vector<std::size_t>{1, 2}));
}

TEST(Pairing, TheWaitingJobsTurnNeverLeavesAStepEmpty) {
  // Job 1 is mid-iteration but busy (running a group outside this step), so it cannot be
  // chosen; job 0 does not fit until it finishes. Holding job 2 back for job 0 would choose
  // nobody: job 2 starts.
  auto busy = at(1, 40, 10, 1, {{0, -30 * mib, frees}}, 4);
  busy.ready = false;
  const std::vector<pairing_job> jobs{at(0, 10, 10, 0, {{50 * MiB, 0, alloc}}, 1), busy,
                                      at(2, 10, 10, 0, {{10 * MiB, 10 * mib, alloc}}, 5)};
  EXPECT_EQ(choose_step(jobs, 100 * MiB, 3), (std::vector<std::size_t>{2}));
}

TEST(Pairing, AnIterationThatCannotFitIsRefusedWithTheBudget) {
  try {
    static_cast<void>(plan_round({job(0, 0, 2, 10)}, 15 * MiB, 2));
    FAIL() << "expected a config_error";
  } catch (const tandem::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("15.00 MiB"), std::string::npos) << e.what();
  }
}

TEST(Pairing, RandomRoundsNeverExceedTheBudgetAndRunEveryGroupInOrder) {
  std::mt19937 random(7);
  for (int round = 0; round < 300; ++round) {
    const auto jobs_count = std::uniform_int_distribution<std::size_t>(1, 5)(random);
    const auto streams = std::uniform_int_distribution<std::size_t>(1, 4)(random);
    std::vector<pairing_job> jobs;
    std::size_t idle = 0;
    std::size_t largest_need = 0;
    for (std::size_t j = 0; j < jobs_count; ++j) {
      pairing_job p;
      p.id = static_cast<job_id>(j);
      p.held = std::uniform_int_distribution<std::size_t>(0, 50)(random) * MiB;
      const auto angs = std::uniform_int_distribution<std::size_t>(1, 6)(random);
      std::int64_t live = 0;
      for (std::size_t g = 0; g < angs; ++g) {
        const auto rise = std::uniform_int_distribution<std::int64_t>(1, 20)(random);
        const auto net = std::uniform_int_distribution<std::int64_t>(0, rise)(random);
        p.remaining.push_back(
            {static_cast<std::size_t>(rise) * MiB, net * std::int64_t{MiB}, alloc});
        live += net;
      }
      while (live > 0) {  // give everything back, a bit of gradient allocation on the way
        const auto back = std::min<std::int64_t>(
            live, std::uniform_int_distribution<std::int64_t>(1, 20)(random));
        p.remaining.push_back({2 * MiB, -back * std::int64_t{MiB}, frees});
        live -= back;
      }
      idle += p.held;
      largest_need = std::max(largest_need, need_to_finish(p.remaining));
      jobs.push_back(p);
    }
    // Enough for everyone's idle memory and any one job's iteration: a round must complete.
    const auto budget =
        idle + largest_need + std::uniform_int_distribution<std::size_t>(0, 60)(random) * MiB;
    const auto steps = plan_round(jobs, budget, streams);
    std::vector<std::size_t> next(jobs_count, 0);
    std::vector<std::int64_t> held;
    for (const auto& j : jobs) held.push_back(static_cast<std::int64_t>(j.held));
    for (const auto& step : steps) {
      ASSERT_LE(step.size(), streams);
      std::int64_t total = 0;
      for (const auto h : held) total += h;
      std::int64_t rises = 0;
      for (const auto& entry : step) {
        ASSERT_EQ(entry.group, next[entry.job]) << "groups out of order";
        const auto& need = jobs[entry.job].remaining[entry.group];
        rises += static_cast<std::int64_t>(need.rise);
      }
      ASSERT_LE(total + rises, static_cast<std::int64_t>(budget)) << "round " << round;
      for (const auto& entry : step) {
        held[entry.job] += jobs[entry.job].remaining[entry.group].net;
        ++next[entry.job];
      }
    }
    for (std::size_t j = 0; j < jobs_count; ++j) ASSERT_EQ(next[j], jobs[j].remaining.size());
  }
}

TEST(CounterBarrier, OpensWhenEveryMemberArrivedOrLeft) {
  counter_barrier barrier;
  EXPECT_TRUE(barrier.is_open());
  barrier.open({1, 2, 3});
  EXPECT_FALSE(barrier.is_open());
  EXPECT_FALSE(barrier.arrive(1));
  EXPECT_FALSE(barrier.arrive(7));  // not a member: changes nothing
  EXPECT_FALSE(barrier.arrive(1));  // arrives once
  EXPECT_FALSE(barrier.remove(3));  // left mid-step: no longer waited for
  EXPECT_TRUE(barrier.arrive(2));
  EXPECT_TRUE(barrier.is_open());
  EXPECT_EQ(barrier.steps(), 1u);
  barrier.open({4});
  EXPECT_THROW(barrier.open({5}), tandem::usage_error);
  EXPECT_TRUE(barrier.remove(4));
}

}  // namespace
