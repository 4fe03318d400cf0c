// The NodeGroup policy driven by hand, as a driver would: profiling alone, then group by group
// through the barrier; jobs that leave mid-step; the leader forced on when nothing fits.

#include "tandem/schedule/nodegroup.hpp"

#include <gtest/gtest.h>

#include <array>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/registry.hpp"

namespace {

using tandem::MiB;
using namespace tandem::schedule;

const auto start = decision::start();
const auto wait = decision::wait_for_event();

/// An iteration of `angs` forward allocations of 10 MiB, then as many backward steps that each
/// make a 1 MiB gradient temporary, free a 10 MiB feature map and the temporary. Regions follow
/// live bytes exactly, above `idle_mib`. Cut with a 10 MiB split: 4 ANGs of +10 MiB (rise 10),
/// then 4 DNGs of -10 MiB (rise 1), boundaries at allocations 1..7.
iteration_report iteration(std::size_t idle_mib, std::size_t angs) {
  iteration_report report;
  report.held.held_at_start = idle_mib * MiB;
  std::size_t held = idle_mib * MiB;
  const auto add = [&](std::int64_t mib) {
    held = static_cast<std::size_t>(static_cast<std::int64_t>(held) + mib * std::int64_t{MiB});
    report.memory.push_back({mib * std::int64_t{MiB}, held});
    report.held.steps.push_back({0.0, mib * std::int64_t{MiB}});
  };
  for (std::size_t i = 0; i < angs; ++i) add(10);
  for (std::size_t i = 0; i < angs; ++i) {
    add(1);
    add(-10);
    add(-1);
  }
  return report;
}

/// Runs `job`'s whole iteration, group by group, as soon as the policy lets it (for jobs whose
/// groups the test does not look at).
void run_iteration(nodegroup_policy& policy, job_id job, const iteration_report& report,
                   double& now) {
  ASSERT_EQ(policy.may_start(job, now), start);
  policy.on_iteration_start(job, now);
  const auto boundaries = policy.group_boundaries(job);
  for (std::size_t g = 1; g <= boundaries.size(); ++g) {
    policy.on_group_end(job, g - 1, now += 0.1);
    ASSERT_EQ(policy.may_enter_group(job, g, now), start) << "group " << g;
    policy.on_group_start(job, g, now);
  }
  policy.on_iteration_end(job, report, now += 0.1);
}

/// Two jobs of 100 MiB idle with 4 x 10 MiB allocations, each profiled alone twice and
/// calibrated alone once.
struct two_jobs {
  nodegroup_policy policy;
  double now = 0;

  /// `final_budget_mib`: the budget changes to it just before the last solo iteration ends.
  explicit two_jobs(std::size_t budget_mib, std::optional<std::size_t> final_budget_mib = {})
      : policy(budget_mib * MiB, {10 * MiB, 4, 2, 2}) {
    policy.on_arrival(job_info::make(0, "a", 0), now);
    policy.on_arrival(job_info::make(1, "b", 0), now);
    const std::vector<job_id> solo{0, 0, 0, 1, 1, 1};
    for (std::size_t i = 0; i < solo.size(); ++i) {
      const auto job = solo[i];
      EXPECT_EQ(policy.may_start(job == 0 ? 1 : 0, now), wait) << "profiling runs alone";
      if (i + 1 == solo.size() && final_budget_mib)
        policy.on_budget_change(*final_budget_mib * MiB, now);
      run_iteration(policy, job, iteration(100, 4), now);
    }
  }
};

TEST(NodeGroup, ProfilesEachJobAloneThenCutsItsIterationIntoGroups) {
  two_jobs run(1000);
  for (const job_id job : {0u, 1u}) {
    const auto stats = run.policy.stats(job);
    EXPECT_EQ(stats.solo_iterations, 3);
    EXPECT_EQ(stats.groups, 8u);
    EXPECT_EQ(stats.allocating_groups, 4u);
    EXPECT_EQ(run.policy.group_boundaries(job), (std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7}));
  }
}

TEST(NodeGroup, OnATightBudgetTheSecondJobsAllocatingGroupsWaitForTheFirstJobsFrees) {
  // 250 MiB: both idle holdings (200) and one job's peak (241) fit, not a second peak.
  two_jobs run(250);
  auto& policy = run.policy;
  double now = run.now;
  const double waited_before = policy.stats(1).barrier_wait_s;
  // Steps 1-4: job 0's ANGs alone; job 1 starting would leave no room for job 0's peak.
  ASSERT_EQ(policy.may_start(0, now), start);
  EXPECT_EQ(policy.may_start(1, now), wait);
  policy.on_iteration_start(0, now);
  for (std::size_t g = 1; g <= 4; ++g) {
    policy.on_group_end(0, g - 1, now += 0.1);
    ASSERT_EQ(policy.may_enter_group(0, g, now), start) << g;
    EXPECT_EQ(policy.may_start(1, now), wait) << g;
    policy.on_group_start(0, g, now);
  }
  // Step 5 was job 0's first DNG: its frees count only once its barrier is passed, so job 1
  // starts beside job 0's second DNG and takes the memory the first one gave back.
  policy.on_group_end(0, 4, now += 0.1);
  EXPECT_EQ(policy.may_enter_group(0, 5, now), start);
  EXPECT_EQ(policy.may_start(1, now), start);
  EXPECT_EQ(policy.forced_steps(), 0u);
  EXPECT_NEAR(policy.stats(1).barrier_wait_s - waited_before, 0.5, 1e-9);
}

TEST(NodeGroup, AMemberThatLeavesMidStepDoesNotHoldTheOthersAtTheBarrier) {
  two_jobs run(1000);
  auto& policy = run.policy;
  double now = run.now;
  ASSERT_EQ(policy.may_start(0, now), start);
  policy.on_iteration_start(0, now);
  ASSERT_EQ(policy.may_start(1, now), start);
  policy.on_iteration_start(1, now);
  policy.on_group_end(1, 0, now += 0.1);
  EXPECT_EQ(policy.may_enter_group(1, 1, now), wait);  // job 0 is still in the step
  policy.on_departure(0, now += 0.1);                  // fails mid-group
  EXPECT_EQ(policy.may_enter_group(1, 1, now), start);
  EXPECT_EQ(policy.stats(0).iterations, 3) << "a departed job's statistics stay";
}

TEST(NodeGroup, AJobArrivingMidIterationIsProfiledOnceTheOthersFinishTheirs) {
  two_jobs run(1000);
  auto& policy = run.policy;
  double now = run.now;
  ASSERT_EQ(policy.may_start(0, now), start);
  policy.on_iteration_start(0, now);
  policy.on_arrival(job_info::make(2, "c", now), now);
  // Job 1 may not start a new iteration while the newcomer waits to be profiled.
  EXPECT_EQ(policy.may_start(1, now), start) << "chosen before the newcomer arrived";
  policy.on_iteration_start(1, now);
  // Both in lockstep through their groups.
  const auto groups = policy.group_boundaries(0).size() + 1;
  for (std::size_t g = 1; g < groups; ++g) {
    policy.on_group_end(0, g - 1, now += 0.1);
    policy.on_group_end(1, g - 1, now);
    ASSERT_EQ(policy.may_enter_group(0, g, now), start);
    ASSERT_EQ(policy.may_enter_group(1, g, now), start);
    EXPECT_EQ(policy.may_start(2, now), wait);
    policy.on_group_start(0, g, now);
    policy.on_group_start(1, g, now);
  }
  policy.on_iteration_end(0, iteration(100, 4), now += 0.1);
  EXPECT_EQ(policy.may_start(2, now), wait) << "job 1 is mid-iteration";
  EXPECT_EQ(policy.may_start(0, now), wait) << "the newcomer goes first";
  policy.on_iteration_end(1, iteration(100, 4), now += 0.1);
  EXPECT_EQ(policy.may_start(2, now), start);
  EXPECT_EQ(policy.may_start(0, now), wait);
}

/// A way to run job 0's iteration: from its 100 MiB idle holding up by `rise_mib` and back,
/// taking `seconds`.
footprint_variant variant(std::size_t rise_mib, double seconds) {
  footprint_variant v;
  v.label = rise_mib == 41 ? "none" : "plan";
  v.held.held_at_start = 100 * MiB;
  const auto rise = static_cast<std::int64_t>(rise_mib * MiB);
  v.held.steps = {{0.1 * seconds, rise}, {0.9 * seconds, -rise}};
  v.held.duration_s = seconds;
  v.iteration_s = seconds;
  return v;
}

/// Job 0, offered `variants`, with a plan inflated by one grown iteration (51 MiB above its
/// 100 MiB idle holding), and job 1 pipelined beside it (41 MiB), under `budget_mib` from job
/// 1's last solo iteration on.
nodegroup_policy inflated_pair(std::size_t budget_mib, std::vector<footprint_variant> variants,
                               double& now) {
  nodegroup_policy policy(1000 * MiB, {10 * MiB, 4, 2, 2});
  policy.on_arrival(job_info::make(0, "a", 0), now);
  policy.offer_variants(0, std::move(variants));
  for (int i = 0; i < 3; ++i) run_iteration(policy, 0, iteration(100, 4), now);
  // One iteration whose groups took 20 MiB more: the plan now needs 61 MiB above the idle
  // holding, although the job never held more than 141 MiB in all.
  auto grown = iteration(100, 4);
  for (auto& event : grown.memory) event.held_after += 20 * MiB;
  run_iteration(policy, 0, grown, now);
  policy.on_arrival(job_info::make(1, "b", now), now);
  // Job 0 was already granted its next iteration; the plan shrinks back by half the excess
  // (51 MiB), then job 1 is profiled alone.
  run_iteration(policy, 0, iteration(100, 4), now);
  for (int i = 0; i < 3; ++i) {
    if (i == 2) policy.on_budget_change(budget_mib * MiB, now);
    run_iteration(policy, 1, iteration(100, 4), now);
  }
  return policy;
}

TEST(NodeGroup, AJobWhosePlanCannotFitBesideTheOthersRunsAloneRatherThanStarve) {
  double now = 0;
  auto policy = inflated_pair(245, {}, now);
  // 245 MiB: job 1's plan (41 MiB) fits beside job 0's 100 idle; job 0's inflated plan (51)
  // does not, but its largest measured holding does: it runs alone instead of waiting forever.
  EXPECT_EQ(policy.may_start(0, now), start);
  EXPECT_EQ(policy.may_start(1, now), wait);
  EXPECT_EQ(policy.stats(0).solo_fallbacks, 1);
  EXPECT_EQ(policy.forced_steps(), 0u);
}

TEST(NodeGroup, AJobThatWouldRunAloneRunsACheapPlanBesideThePipelineInstead) {
  double now = 0;
  auto policy = inflated_pair(250, {variant(41, 1.0), variant(5, 1.2)}, now);
  const auto needs = policy.planned_needs(0);
  EXPECT_EQ(policy.stats(0).plans, 1);
  EXPECT_EQ(policy.stats(0).planned, 0) << "profiling and calibration ran plain";
  // Plain, job 0 does not fit beside job 1's idle 100 MiB (100 + 100 + 51 > 250) and would run
  // alone; its plan (+5 MiB, 0.2 s more) costs less than a plain iteration of job 1's waiting.
  ASSERT_EQ(policy.may_start(0, now), start);
  EXPECT_EQ(policy.chosen_variant(0), 1u);
  EXPECT_TRUE(policy.group_boundaries(0).empty()) << "a planned iteration is one group";
  policy.on_iteration_start(0, now);
  EXPECT_EQ(policy.stats(0).planned, 1);
  EXPECT_NEAR(policy.stats(0).plan_extra_s, 0.2, 1e-9);
  EXPECT_EQ(policy.stats(0).solo_fallbacks, 0);
  // It runs beside the pipeline with 105 MiB reserved: job 1's groups go on beside it
  // (105 + 100 + 41 <= 250).
  EXPECT_EQ(policy.may_start(1, now), start);
  policy.on_iteration_start(1, now);
  // Its planned iteration is not learned from: its groups stay as they were.
  iteration_report planned;
  planned.held.held_at_start = 100 * MiB;
  planned.held.steps = {{0.1, static_cast<std::int64_t>(5 * MiB)},
                        {0.9, -static_cast<std::int64_t>(5 * MiB)}};
  planned.memory = {{static_cast<std::int64_t>(5 * MiB), 105 * MiB},
                    {-static_cast<std::int64_t>(5 * MiB), 100 * MiB}};
  policy.on_iteration_end(0, planned, now += 1.2);
  EXPECT_EQ(policy.planned_needs(0), needs);
  EXPECT_EQ(policy.stats(0).repartitions, 0);
  EXPECT_EQ(policy.chosen_variant(0), 0u);
}

/// Drives job 0 and job 1 (plain iterations of `iteration(100, 4)`) as a driver would: each tick
/// ends every running group (job 0's first), and a job at a boundary asks until it may go on.
class pair_driver {
 public:
  pair_driver(nodegroup_policy& policy, double& now) : policy_(policy), now_(now) {}

  struct job0_iteration {
    std::size_t variant = 0;
    std::vector<std::size_t> boundaries;
    bool waited_at_a_boundary = false;
  };

  /// Runs until job 0 has ended one iteration, reported as `report` (its start and end set
  /// here, the end `extra_s` after its last tick), and says how it ran.
  job0_iteration run_job0(iteration_report report, double extra_s = 0) {
    job0_iteration ran;
    bool done = false;
    const auto ask = [&](job_id job) {
      auto& run = runs_[job];
      if (run.running || (job == 0 && done)) return;
      const bool first = run.groups == 0;
      const auto verdict =
          first ? policy_.may_start(job, now_) : policy_.may_enter_group(job, run.group, now_);
      if (verdict != start) {
        if (job == 0 && !first) ran.waited_at_a_boundary = true;
        return;
      }
      if (first) {
        if (job == 0) {
          ran.variant = policy_.chosen_variant(0);
          report.start_s = now_;
        }
        policy_.on_iteration_start(job, now_);
        const auto cut = policy_.group_boundaries(job);
        if (job == 0) ran.boundaries = cut;
        run.groups = cut.size() + 1;
      } else {
        policy_.on_group_start(job, run.group, now_);
      }
      run.running = true;
    };
    for (int tick = 0; tick < 100 && !done; ++tick) {
      ask(0);
      ask(1);
      for (const job_id job : {0u, 1u}) {
        auto& run = runs_[job];
        if (!run.running) continue;
        run.running = false;
        if (run.group + 1 < run.groups) {
          policy_.on_group_end(job, run.group++, now_ += 0.1);
        } else if (job == 0) {
          run = {};
          report.end_s = (now_ += 0.1 + extra_s);
          policy_.on_iteration_end(0, report, now_);
          done = true;
        } else {
          run = {};
          policy_.on_iteration_end(1, iteration(100, 4), now_ += 0.1);
        }
        ask(0);
        ask(1);
      }
    }
    EXPECT_TRUE(done);
    return ran;
  }

 private:
  struct run_state {
    std::size_t groups = 0;  // 0: not started
    std::size_t group = 0;
    bool running = false;
  };
  nodegroup_policy& policy_;
  double& now_;
  std::array<run_state, 2> runs_;
};

/// Job 0's iteration under a plan that rises 9 MiB above its 100 MiB: two 4 MiB feature maps,
/// then two backward steps that make a 1 MiB temporary and free a map and the temporary. Cut
/// at a 10 MiB split: one allocating group up to the peak (+9), one freeing group from the
/// first free on, at allocation 3.
iteration_report planned_iteration() {
  iteration_report planned;
  planned.held.held_at_start = 100 * MiB;
  std::size_t held = 100 * MiB;
  for (const std::int64_t mib : {4, 4, 1, -4, -1, 1, -4, -1}) {
    held = static_cast<std::size_t>(static_cast<std::int64_t>(held) + mib * std::int64_t{MiB});
    planned.memory.push_back({mib * std::int64_t{MiB}, held});
    planned.held.steps.push_back({0.0, mib * std::int64_t{MiB}});
  }
  return planned;
}

TEST(NodeGroup, APlanLearnsGroupsOfItsOwnThenStepsThroughThePipeline) {
  double now = 0;
  // A plan of job 0 that rises 9 MiB, 0.2 s dearer than plain; plain does not fit beside job
  // 1's idle 100 MiB under 250 (100 + 100 + 51), the plan does, even beside job 1's peak.
  auto policy = inflated_pair(250, {variant(41, 1.0), variant(9, 1.2)}, now);
  const auto plain_needs = policy.planned_needs(0);
  const auto planned = planned_iteration();
  pair_driver driver(policy, now);
  const auto round = [&] {
    const auto ran = driver.run_job0(planned);
    EXPECT_EQ(ran.variant, 1u) << "runs its plan";
    return std::make_pair(ran.boundaries, ran.waited_at_a_boundary);
  };
  // First run: one group, beside the steps, with its predicted peak reserved.
  EXPECT_EQ(round(), std::make_pair(std::vector<std::size_t>{}, false));
  EXPECT_EQ(policy.stats(0).planned_in_steps, 0);
  // Second: gated at the groups cut from the first, going on at once: it calibrates them.
  EXPECT_EQ(round(), std::make_pair(std::vector<std::size_t>{3}, false));
  EXPECT_EQ(policy.stats(0).planned_in_steps, 0);
  // Third: it steps through the pipeline, waiting at its boundary for job 1's group to end.
  EXPECT_EQ(round(), std::make_pair(std::vector<std::size_t>{3}, true));
  EXPECT_EQ(policy.stats(0).planned, 3);
  EXPECT_EQ(policy.stats(0).planned_in_steps, 1);
  EXPECT_EQ(policy.planned_needs(0), plain_needs) << "the plain groups learned nothing";
  EXPECT_EQ(policy.stats(0).repartitions, 0);
  // New plans are learned anew.
  policy.offer_variants(0, {variant(41, 1.0), variant(9, 1.2)});
  EXPECT_EQ(round(), std::make_pair(std::vector<std::size_t>{}, false));
}

TEST(NodeGroup, APlanWithinItsShareOfTheRoomIsChosenUntilItRunsSlowerThanTakingTurns) {
  double now = 0;
  // Room above both jobs' 100 MiB under 250: 50 MiB; job 1's plain iteration needs 41, so job
  // 0's share is half the room, 25. A free plan rising 30 fits beside job 1's idle holding
  // only: it would take turns with job 1. A plan rising 9 fits beside job 1's peak and costs
  // 0.3 s more, less than the plain iteration (1 s) that taking turns costs job 1.
  auto policy = inflated_pair(250, {variant(41, 1.0), variant(30, 1.0), variant(9, 1.3)}, now);
  pair_driver driver(policy, now);
  const auto planned = planned_iteration();
  EXPECT_EQ(driver.run_job0(planned).variant, 2u);
  // It learns the plan's groups in 3 iterations and keeps it while side by side it takes less
  // than 2 x 1 s, the two jobs' iterations one after the other.
  EXPECT_EQ(driver.run_job0(planned, 1.5).variant, 2u);
  EXPECT_EQ(driver.run_job0(planned).variant, 2u);
  // Once one of its iterations took longer than taking turns would, the free plan is taken.
  EXPECT_EQ(driver.run_job0(planned, 2.5).variant, 2u);
  EXPECT_EQ(driver.run_job0(planned).variant, 1u);
}

TEST(NodeGroup, APlainIterationThatSwappedOnDemandCostsWhatItTook) {
  nodegroup_policy policy(1000 * MiB, {10 * MiB, 4, 2, 2});
  double now = 0;
  policy.on_arrival(job_info::make(0, "a", 0), now);
  for (int i = 0; i < 3; ++i) run_iteration(policy, 0, iteration(100, 4), now);
  policy.offer_variants(0, {variant(41, 1.0), variant(5, 1.2)});
  // Plain fits and is offered at 1 s: the plan, 0.2 s dearer, is not taken.
  auto plain = iteration(100, 4);
  plain.start_s = now;
  plain.end_s = now + 1.0;
  run_iteration(policy, 0, plain, now);
  ASSERT_EQ(policy.may_start(0, now), start);
  EXPECT_EQ(policy.chosen_variant(0), 0u);
  // One that had to swap on demand took 3 s: the plan is now the cheaper way.
  auto swapped = iteration(100, 4);
  swapped.start_s = now;
  swapped.end_s = now + 3.0;
  swapped.swapped_on_demand_bytes = MiB;
  run_iteration(policy, 0, swapped, now);
  ASSERT_EQ(policy.may_start(0, now), start);
  EXPECT_EQ(policy.chosen_variant(0), 1u);
}

TEST(NodeGroup, APlanDearerThanRunningAloneIsNotChosenAndNoneFitsIsNoneChosen) {
  double now = 0;
  auto dear = inflated_pair(250, {variant(41, 1.0), variant(5, 3.0)}, now);  // 2 s dearer
  EXPECT_EQ(dear.may_start(0, now), start);
  EXPECT_EQ(dear.chosen_variant(0), 0u);
  EXPECT_EQ(dear.stats(0).solo_fallbacks, 1);

  now = 0;
  auto large = inflated_pair(250, {variant(41, 1.0), variant(60, 1.1)}, now);  // does not fit
  EXPECT_EQ(large.may_start(0, now), start);
  EXPECT_EQ(large.chosen_variant(0), 0u);
  EXPECT_EQ(large.stats(0).solo_fallbacks, 1);
}

TEST(NodeGroup, WhereNothingFitsAPlanQuickerThanAPlainIterationThatSwappedRunsAlone) {
  // As `large` above (inflated_pair's steps), but job 0's plain iteration beside job 1's
  // arrival swapped on demand and took 3 s: its plan, 9 MiB over what fits beside job 1's idle
  // holding, runs alone in its place and swaps only what it lacks, not all the plain one did.
  double now = 0;
  nodegroup_policy policy(1000 * MiB, {10 * MiB, 4, 2, 2});
  policy.on_arrival(job_info::make(0, "a", 0), now);
  policy.offer_variants(0, {variant(41, 1.0), variant(60, 1.1)});
  for (int i = 0; i < 3; ++i) run_iteration(policy, 0, iteration(100, 4), now);
  auto grown = iteration(100, 4);
  for (auto& event : grown.memory) event.held_after += 20 * MiB;
  run_iteration(policy, 0, grown, now);
  policy.on_arrival(job_info::make(1, "b", now), now);
  auto swapped = iteration(100, 4);
  swapped.start_s = now;
  swapped.end_s = now + 3.0;
  swapped.swapped_on_demand_bytes = MiB;
  run_iteration(policy, 0, swapped, now);
  for (int i = 0; i < 3; ++i) {
    if (i == 2) policy.on_budget_change(250 * MiB, now);
    run_iteration(policy, 1, iteration(100, 4), now);
  }
  ASSERT_EQ(policy.may_start(0, now), start);
  EXPECT_EQ(policy.chosen_variant(0), 1u);
  EXPECT_EQ(policy.may_start(1, now), wait) << "it runs alone";
  policy.on_iteration_start(0, now);
  EXPECT_EQ(policy.stats(0).planned, 1);
  EXPECT_EQ(policy.stats(0).solo_fallbacks, 0);
}

TEST(NodeGroup, WhenNothingFitsMidIterationTheLeaderGoesOnAloneRatherThanStall) {
  two_jobs run(1000);
  auto& policy = run.policy;
  double now = run.now;
  for (const job_id job : {0u, 1u}) {
    ASSERT_EQ(policy.may_start(job, now), start);
    policy.on_iteration_start(job, now);
  }
  // Both are one group in when the budget drops below what they hold: no next group fits,
  // and no event would come if both waited.
  policy.on_budget_change(150 * MiB, now);
  policy.on_group_end(0, 0, now += 0.1);
  policy.on_group_end(1, 0, now += 0.1);
  EXPECT_EQ(policy.may_enter_group(0, 1, now), start);
  EXPECT_EQ(policy.may_enter_group(1, 1, now), wait);
  EXPECT_EQ(policy.forced_steps(), 1u);
}

TEST(NodeGroup, AJobThatRestartedShortOfMemoryWaitsForTheOthersToLeave) {
  // b's iteration let go at 950 MiB, beside a's 100 idle under 1000 (a real VGG-16 beside two
  // idle jobs' persistent memory). Started again at once it would meet the same shortage and
  // give up; it waits while a goes on, and starts once a has left.
  two_jobs run(1000);
  auto& policy = run.policy;
  double now = run.now;
  ASSERT_EQ(policy.may_start(1, now), start);
  policy.on_iteration_start(1, now);
  auto cut = iteration(100, 4);
  cut.held.steps.push_back({0.0, 850 * std::int64_t{MiB}});  // reached 950 MiB
  cut.restarted = true;
  policy.on_iteration_end(1, cut, now += 0.1);
  EXPECT_EQ(policy.may_start(1, now), wait);
  run_iteration(policy, 0, iteration(100, 4), now);
  EXPECT_EQ(policy.may_start(1, now), wait) << "a is still there, holding 100 MiB";
  policy.on_departure(0, now);
  EXPECT_EQ(policy.may_start(1, now), start);
}

TEST(NodeGroup, ANewJobIsBuiltOnlyWhileTheOthersLeaveRoomForTheLargestPeakSeen) {
  nodegroup_policy policy(230 * MiB, {10 * MiB, 4, 2, 2});
  double now = 0;
  policy.on_arrival(job_info::make(0, "a", 0), now);
  for (int i = 0; i < 3; ++i) run_iteration(policy, 0, iteration(100, 4), now);
  // Job 0 holds 100 MiB between iterations and peaked at 141: a newcomer could need as much.
  policy.on_arrival(job_info::make(1, "b", now), now);
  EXPECT_EQ(policy.may_start(1, now), wait);
  EXPECT_EQ(policy.may_start(0, now), start) << "the newcomer holds nobody up";
  policy.on_iteration_start(0, now);
  policy.on_departure(0, now);
  EXPECT_EQ(policy.may_start(1, now), start) << "admitted once room appears";
}

TEST(NodeGroup, WithoutMemoryEventsEachIterationIsOneGroup) {
  nodegroup_policy policy(1000 * MiB, {});
  double now = 0;
  policy.on_arrival(job_info::make(0, "a", 0), now);
  auto report = iteration(100, 4);
  report.memory.clear();
  run_iteration(policy, 0, report, now);
  run_iteration(policy, 0, report, now);
  EXPECT_TRUE(policy.group_boundaries(0).empty());
  EXPECT_EQ(policy.stats(0).groups, 1u);
  EXPECT_EQ(policy.may_start(0, now), start);
}

TEST(NodeGroup, AChangedAllocationSequenceIsPartitionedAgain) {
  nodegroup_policy policy(1000 * MiB, {});
  double now = 0;
  policy.on_arrival(job_info::make(0, "a", 0), now);
  run_iteration(policy, 0, iteration(100, 4), now);
  run_iteration(policy, 0, iteration(100, 4), now);
  run_iteration(policy, 0, iteration(100, 6), now);
  EXPECT_EQ(policy.stats(0).repartitions, 1);
  EXPECT_EQ(policy.partition_of(0)->allocations, 12u);
}

TEST(NodeGroup, AGroupThatGrowsIsPlannedLargerAtOnceAndShrinksBackSlowly) {
  nodegroup_policy policy(1000 * MiB, {10 * MiB, 4, 2, 2});
  double now = 0;
  policy.on_arrival(job_info::make(0, "a", 0), now);
  for (int i = 0; i < 3; ++i) run_iteration(policy, 0, iteration(100, 4), now);
  ASSERT_EQ(policy.planned_needs(0).front().rise, 10 * MiB);
  auto grown = iteration(100, 4);
  for (auto& event : grown.memory) event.held_after += 20 * MiB;  // its first group took 30
  run_iteration(policy, 0, grown, now);
  EXPECT_EQ(policy.planned_needs(0).front().rise, 30 * MiB);
  EXPECT_EQ(policy.planned_needs(0).front().net, static_cast<std::int64_t>(30 * MiB));
  run_iteration(policy, 0, iteration(100, 4), now);
  EXPECT_EQ(policy.planned_needs(0).front().rise, 20 * MiB) << "half the excess goes";
  EXPECT_EQ(policy.planned_needs(0).front().net, static_cast<std::int64_t>(20 * MiB))
      << "the net shrinks back the same way";
  run_iteration(policy, 0, iteration(100, 4), now);
  EXPECT_EQ(policy.planned_needs(0).front().rise, 15 * MiB);
  EXPECT_EQ(policy.stats(0).repartitions, 0);
}

TEST(NodeGroup, IsMadeByNameWithItsOptionsAndRefusesBadOnes) {
  policy_context context{1000 * MiB, 2, {{"split_mib", 64}, {"streams", 3}}};
  const auto made = make_policy("nodegroup", context);
  EXPECT_EQ(made->name(), "nodegroup");
  EXPECT_EQ(
      policy_option_names("nodegroup"),
      (std::vector<std::string>{"split_mib", "groups_per_phase", "streams", "profile_iterations"}));
  for (const auto& [key, value] : std::vector<std::pair<std::string, double>>{
           {"streams", 0}, {"streams", 1.5}, {"split_mib", -1}, {"profile_iterations", 0}}) {
    context.options = {{key, value}};
    try {
      static_cast<void>(make_policy("nodegroup", context));
      ADD_FAILURE() << key << " = " << value << " was accepted";
    } catch (const tandem::config_error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

}  // namespace
