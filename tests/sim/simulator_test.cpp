// The simulator on tiny hand-written profiles whose outcome can be worked out on paper, for
// every baseline; the compute-sharing and unified-memory models; the region replay.

#include "tandem/sim/simulator.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/baselines.hpp"
#include "tandem/schedule/nodegroup.hpp"
#include "tandem/schedule/scrooge.hpp"
#include "tandem/sim/region_replay.hpp"

namespace tandem::sim {
namespace {

/// One operation of `seconds` at `fill`; holds `base` all the time and `extra` more over the
/// middle half of the iteration.
std::shared_ptr<job_profile> flat_profile(double seconds, double fill, std::size_t base = 10 * MiB,
                                          std::size_t extra = 0) {
  auto profile = std::make_shared<job_profile>();
  profile->model = "toy";
  profile->persistent_tensors = {base};
  profile->operations = {{"op", seconds, fill, 0}};
  profile->held.held_at_start = base;
  profile->held.duration_s = seconds;
  if (extra > 0) {
    profile->held.steps = {{seconds / 4, static_cast<std::int64_t>(extra)},
                           {3 * seconds / 4, -static_cast<std::int64_t>(extra)}};
  }
  profile->peak_live_bytes = base + extra;
  return profile;
}

simulated_job job(std::string name, std::shared_ptr<job_profile> profile, std::int64_t iterations,
                  double arrival_s = 0) {
  simulated_job j;
  j.spec.name = std::move(name);
  j.spec.model = "toy";
  j.spec.batch_size = 10;
  j.spec.iterations = iterations;
  j.spec.arrival_s = arrival_s;
  j.profile = std::move(profile);
  return j;
}

device_model gpu(std::size_t capacity = 1 * GiB) {
  device_model device;
  device.description = "test device";
  device.capacity = capacity;
  return device;
}

const runtime::job_result& named(const runtime::run_result& result, const std::string& name) {
  for (const auto& j : result.jobs) {
    if (j.name == name) return j;
  }
  throw std::runtime_error("no job " + name);
}

TEST(Simulator, ExclusiveRunsOneJobToCompletionThenTheNext) {
  schedule::exclusive_policy policy;
  const auto result =
      simulate({job("a", flat_profile(1, 1), 3), job("b", flat_profile(1, 1), 3)}, policy, gpu());
  EXPECT_DOUBLE_EQ(named(result, "a").end_s, 3);
  EXPECT_DOUBLE_EQ(named(result, "b").first_start_s, 3);
  EXPECT_DOUBLE_EQ(result.makespan_s, 6);
  EXPECT_DOUBLE_EQ(result.aggregate_samples_per_s, 60.0 / 6);
  EXPECT_DOUBLE_EQ(named(result, "b").wait_s, 3);
  EXPECT_DOUBLE_EQ(named(result, "a").samples_per_s, 10);
}

TEST(Simulator, TemporalAlternatesIterations) {
  schedule::temporal_policy policy;
  const auto result =
      simulate({job("a", flat_profile(1, 1), 3), job("b", flat_profile(2, 1), 3)}, policy, gpu());
  // a b a b a b: a ends at 1+2+1+2+1 = 7, b at 9.
  EXPECT_DOUBLE_EQ(named(result, "a").end_s, 7);
  EXPECT_DOUBLE_EQ(named(result, "b").end_s, 9);
  const auto& log = named(result, "b").iteration_log;
  ASSERT_EQ(log.size(), 3u);
  EXPECT_DOUBLE_EQ(log[1].start_s, 4);
}

TEST(Simulator, JobsThatFillLittleRunAtSoloSpeedSideBySide) {
  schedule::spatial_policy policy;
  const auto result = simulate(
      {job("a", flat_profile(1, 0.5), 4), job("b", flat_profile(1, 0.4), 4)}, policy, gpu());
  EXPECT_DOUBLE_EQ(result.makespan_s, 4);
}

TEST(Simulator, JobsThatOverfillShareByProcessorSharing) {
  schedule::spatial_policy policy;
  // Fills 1 + 0.25: both run at 1 / 1.25 = 0.8 of solo speed while together. b (1 s of work)
  // ends at 1.25 s; a then has 2 - 1 = 1 s of work left alone: ends at 2.25 s.
  const auto result = simulate(
      {job("a", flat_profile(2, 1), 1), job("b", flat_profile(1, 0.25), 1)}, policy, gpu());
  EXPECT_NEAR(named(result, "b").end_s, 1.25, 1e-9);
  EXPECT_NEAR(named(result, "a").end_s, 2.25, 1e-9);
}

TEST(Simulator, SpatialOverTheBudgetFailsTheJobThatAsksLastWithAnOutOfMemoryError) {
  schedule::spatial_policy policy;
  // Each holds 10 MiB and 60 MiB more from a quarter of its iteration: 140 MiB > 100 MiB. b is
  // slower, so it reaches its quarter later and is refused.
  const auto result = simulate({job("a", flat_profile(1, 0.5, 10 * MiB, 60 * MiB), 2),
                                job("b", flat_profile(2, 0.5, 10 * MiB, 60 * MiB), 2)},
                               policy, gpu(100 * MiB));
  const auto& b = named(result, "b");
  EXPECT_EQ(b.status, runtime::job_status::failed);
  EXPECT_TRUE(b.out_of_memory);
  EXPECT_NE(b.error.find("out of memory"), std::string::npos) << b.error;
  EXPECT_NE(b.error.find("held by other jobs"), std::string::npos) << b.error;
  EXPECT_DOUBLE_EQ(b.end_s, 0.5);
  EXPECT_EQ(named(result, "a").status, runtime::job_status::completed);
  EXPECT_LE(result.peak_reserved_bytes, 100 * MiB);
  EXPECT_EQ(result.failed_jobs(), 1u);
}

TEST(Simulator, StaticPartitionsFailAJobThatOutgrowsItsShare) {
  schedule::static_partition_policy policy(100 * MiB, 2);
  const auto result = simulate({job("small", flat_profile(1, 0.5, 10 * MiB, 20 * MiB), 2),
                                job("big", flat_profile(1, 0.5, 10 * MiB, 45 * MiB), 2)},
                               policy, gpu(100 * MiB));
  EXPECT_EQ(named(result, "small").status, runtime::job_status::completed);
  EXPECT_TRUE(named(result, "big").out_of_memory);
  EXPECT_NE(named(result, "big").error.find("its own limit"), std::string::npos);
}

TEST(Simulator, UnifiedMemoryOversubscriptionCostsPagingTime) {
  schedule::spatial_policy policy;
  auto device = gpu(100 * MiB);
  device.unified_memory = true;
  device.pcie_bandwidth = 100.0 * MiB;  // 100 MiB/s
  auto a = flat_profile(1, 0.5, 60 * MiB);
  a->operations[0].bytes_touched = 100 * MiB;  // 100 MiB per solo second
  auto b = a;
  // Together they hold 120 MiB of 100: a sixth of every touched byte pages, over a link both
  // share: 1 + (1/6) x 100 MiB x 2 / 100 MiB/s = 1.333 s per iteration, for both.
  const auto result = simulate({job("a", a, 3), job("b", b, 3)}, policy, device);
  EXPECT_NEAR(result.makespan_s, 3 * (1 + 1.0 / 3), 1e-9);
  EXPECT_EQ(result.peak_reserved_bytes, 120 * MiB);  // the budget is what this baseline breaks
  EXPECT_EQ(result.failed_jobs(), 0u);
}

TEST(Simulator, SetupTimeArrivalsAndDurationBoundJobs) {
  schedule::spatial_policy policy;
  auto slow_start = flat_profile(1, 0.5);
  slow_start->setup_s = 0.5;
  auto timed = job("timed", flat_profile(1, 0.5), 0, 2);
  timed.spec.iterations.reset();
  timed.spec.duration_s = 2.5;  // iterations start until 2.5 s after its first: three of them
  const auto result = simulate({job("a", slow_start, 2), timed}, policy, gpu());
  EXPECT_DOUBLE_EQ(named(result, "a").first_start_s, 0.5);
  EXPECT_DOUBLE_EQ(named(result, "a").end_s, 2.5);
  EXPECT_DOUBLE_EQ(named(result, "timed").first_start_s, 2);
  EXPECT_EQ(named(result, "timed").iterations, 3);
  EXPECT_DOUBLE_EQ(result.makespan_s, 5);
}

TEST(Simulator, ScroogeCompletesWithinTheBudgetWhereSpatialFails) {
  // Peaks of 80 MiB each against 128 MiB: together 1.25x the budget.
  auto profile = flat_profile(1, 0.5, 8 * MiB, 72 * MiB);
  std::vector<simulated_job> jobs{job("a", profile, 20), job("b", profile, 20)};
  schedule::spatial_policy spatial;
  EXPECT_EQ(simulate(jobs, spatial, gpu(128 * MiB)).failed_jobs(), 1u);
  schedule::scrooge_policy scrooge(128 * MiB);
  const auto result = simulate(jobs, scrooge, gpu(128 * MiB));
  EXPECT_EQ(result.failed_jobs(), 0u);
  EXPECT_LE(result.peak_reserved_bytes, 128 * MiB);
  // Out of phase beats taking turns: less than the 40 s of running one iteration at a time.
  EXPECT_LT(result.makespan_s, 38);
  EXPECT_FALSE(result.policy_stats.empty());
}

/// A CNN-like iteration of 0.9 s: four 10 MiB feature maps made over the first 0.4 s, then
/// four backward steps that each make a 1 MiB temporary and free a feature map and the
/// temporary. Regions follow live bytes exactly, above `base`.
std::shared_ptr<job_profile> layered_profile(std::size_t base) {
  auto profile = std::make_shared<job_profile>();
  profile->model = "toy";
  profile->persistent_tensors = {base};
  for (int i = 0; i < 9; ++i) profile->operations.push_back({"op", 0.1, 0.5, 0});
  const auto step = [&](double at, std::int64_t mib) {
    profile->steps.push_back(
        {at, mib * static_cast<std::int64_t>(MiB), memory::alloc_kind::unknown});
    profile->held.steps.push_back({at, mib * static_cast<std::int64_t>(MiB)});
  };
  for (int i = 0; i < 4; ++i) step(0.05 + 0.1 * i, 10);
  for (int i = 0; i < 4; ++i) {
    step(0.45 + 0.1 * i, 1);
    step(0.47 + 0.1 * i, -10);
    step(0.49 + 0.1 * i, -1);
  }
  profile->held.held_at_start = base;
  profile->held.duration_s = 0.9;
  profile->peak_live_bytes = base + 41 * MiB;
  return profile;
}

TEST(Simulator, NodeGroupPairsOneJobsFreeingGroupsWithTheOthersAllocatingOnes) {
  // Peaks of 51 MiB each against 80 MiB: together 1.3x the budget.
  const auto profile = layered_profile(10 * MiB);
  std::vector<simulated_job> jobs{job("a", profile, 20), job("b", profile, 20)};
  schedule::spatial_policy spatial;
  EXPECT_EQ(simulate(jobs, spatial, gpu(80 * MiB)).failed_jobs(), 1u);
  schedule::nodegroup_policy nodegroup(80 * MiB, {10 * MiB, 4, 2, 2});
  const auto result = simulate(jobs, nodegroup, gpu(80 * MiB));
  EXPECT_EQ(result.failed_jobs(), 0u);
  EXPECT_LE(result.peak_reserved_bytes, 80 * MiB);
  EXPECT_EQ(nodegroup.stats(0).groups, 8u);
  EXPECT_EQ(nodegroup.forced_steps(), 0u);
  // Steps with two jobs' groups: more than one group per step on average.
  EXPECT_GT(static_cast<double>(nodegroup.stats(0).groups_run + nodegroup.stats(1).groups_run) /
                static_cast<double>(nodegroup.steps()),
            1.2);
  // Overlapping beats taking turns: 40 iterations of 0.9 s would take 36 s one at a time.
  EXPECT_LT(result.makespan_s, 33);
  // The waits at group boundaries are on each iteration's record, and in the job's wait.
  for (const auto& j : result.jobs) {
    double at_groups = 0;
    for (const auto& it : j.iteration_log) {
      EXPECT_LE(it.group_wait_s, it.end_s - it.start_s + 1e-9);
      at_groups += it.group_wait_s;
    }
    EXPECT_LE(at_groups, j.wait_s + 1e-9) << j.name;
  }
  double at_groups = 0;
  for (const auto& j : result.jobs)
    for (const auto& it : j.iteration_log) at_groups += it.group_wait_s;
  EXPECT_GT(at_groups, 0);
}

/// A host-bound iteration (as GNMT under TensorFlow 1.x is) of eight operations of 0.125 s,
/// each issued by the host in 0.125 s and run by the device in half that, so the device catches
/// up with the host and both finish each operation together. It allocates 4 MiB at the start of
/// each of the first four operations and frees them at the start of each of the last four, as
/// generated profiles do (allocations at operation boundaries). Regions come two allocations at
/// a time: 8 MiB at 0 and at 0.25 s, returned at 0.625 and 0.875 s, so the allocations at 0.125
/// and 0.375 s are served from a region already held.
std::shared_ptr<job_profile> host_bound_profile(std::size_t base) {
  auto profile = std::make_shared<job_profile>();
  profile->model = "toy";
  profile->persistent_tensors = {base};
  for (int i = 0; i < 8; ++i) profile->operations.push_back({"op", 0.125, 0.5, 0, 0.125, 0.0625});
  constexpr auto four = static_cast<std::int64_t>(4 * MiB);
  constexpr auto eight = static_cast<std::int64_t>(8 * MiB);
  for (int i = 0; i < 4; ++i) profile->steps.push_back({0.125 * i, four});
  for (int i = 4; i < 8; ++i) profile->steps.push_back({0.125 * i, -four});
  profile->held.steps = {{0, eight}, {0.25, eight}, {0.625, -eight}, {0.875, -eight}};
  profile->held.held_at_start = base;
  profile->held.duration_s = 1;
  profile->peak_live_bytes = base + 16 * MiB;
  return profile;
}

TEST(Simulator, NodeGroupLetsAJobGoOnFromABoundaryAtAnOperationsEndThatTakesNoRegion) {
  // Peaks of 24 MiB each against 40 MiB: each fits alone, both together do not. Groups of
  // 4 MiB cut the iteration at its second, third and fourth allocations, each at the end of an
  // operation; the second and fourth take no new region. A job let go at such a boundary used to
  // keep its stream stopped at the operation's end (no region move there to move it on), so
  // the simulation ended with every job failed as stalled by the policy (same_gnmt.toml at batch
  // 64 under a 6 GiB budget did so in its first gated iteration).
  const auto profile = host_bound_profile(8 * MiB);
  std::vector<simulated_job> jobs{job("a", profile, 6), job("b", profile, 6)};
  schedule::nodegroup_policy nodegroup(40 * MiB, {4 * MiB, 4, 2, 2});
  const auto result = simulate(jobs, nodegroup, gpu(40 * MiB));
  for (const auto& j : result.jobs) {
    EXPECT_EQ(j.status, runtime::job_status::completed) << j.name << ": " << j.error;
    EXPECT_EQ(j.iterations, 6) << j.name;
  }
  EXPECT_LE(result.peak_reserved_bytes, 40 * MiB);
  EXPECT_EQ(nodegroup.stats(0).groups, 4u);
  EXPECT_EQ(nodegroup.stats(1).groups, 4u);
  // Gated iterations ran (calibration, then pipelined): more group entries than iterations.
  EXPECT_GT(nodegroup.stats(0).groups_run, 6);
  // One iteration at a time would take 12 s: the pairing overlapped some.
  EXPECT_LT(result.makespan_s, 12);
}

TEST(Simulator, AJobLetGoAfterAMemoryWaitAtAnOperationsEndGoesOn) {
  // The same stop another way: the borrow at 0.25 s, where an operation ends, is refused while
  // the budget is lowered to what the job holds (16 MiB); the job waits, and takes it when the
  // budget is raised again at 0.5 s. It used to stay stopped there, failed as stalled.
  const std::vector<runtime::budget_change> changes{{0.2, 16 * MiB, 0}, {0.5, 40 * MiB, 0}};
  schedule::exclusive_policy exclusive;
  const auto result =
      simulate({job("a", host_bound_profile(8 * MiB), 2)}, exclusive, gpu(40 * MiB), changes);
  const auto& a = result.jobs[0];
  EXPECT_EQ(a.status, runtime::job_status::completed) << a.error;
  // Two iterations of 1 s, the first 0.25 s longer for the wait.
  EXPECT_NEAR(result.makespan_s, 2.25, 1e-9);
}

TEST(Simulator, APlannedFaultStrikesAtItsAllocationAndTheJobsMemoryGoesToTheNext) {
  // Allocation 0 builds the job; each iteration then makes eight: the fault at 19 strikes at
  // the third iteration's third allocation, 0.25 s into it.
  const auto profile = layered_profile(10 * MiB);
  std::vector<simulated_job> jobs{job("a", profile, 5), job("b", profile, 5)};
  sim_options options;
  options.faults = {{"a", 19, runtime::injected_fault::kind::out_of_memory}};
  schedule::exclusive_policy exclusive;
  const auto result = simulate(jobs, exclusive, gpu(64 * MiB), {}, options);
  const auto& a = named(result, "a");
  EXPECT_EQ(a.status, runtime::job_status::failed);
  EXPECT_TRUE(a.out_of_memory);
  EXPECT_NE(a.error.find("injected fault at allocation 19"), std::string::npos) << a.error;
  EXPECT_EQ(a.iteration_log.size(), 2u);
  EXPECT_NEAR(a.end_s, 2 * 0.9 + 0.25, 1e-9);
  const auto& b = named(result, "b");
  EXPECT_EQ(b.status, runtime::job_status::completed);
  EXPECT_NEAR(b.end_s, a.end_s + 5 * 0.9, 1e-9);  // it starts when a leaves
  // An error, not a refusal; and a fault before the first iteration fails the build.
  options.faults = {{"b", 0, runtime::injected_fault::kind::error}};
  schedule::scrooge_policy scrooge(64 * MiB);
  const auto second = simulate(jobs, scrooge, gpu(64 * MiB), {}, options);
  EXPECT_FALSE(named(second, "b").out_of_memory);
  EXPECT_TRUE(named(second, "b").iteration_log.empty());
  EXPECT_EQ(named(second, "a").status, runtime::job_status::completed);
}

TEST(Simulator, APlannedRestartRunsTheIterationAgainAndTheJobCompletes) {
  // The restart at allocation 19 cuts the third iteration 0.25 s in; it runs again whole.
  const auto profile = layered_profile(10 * MiB);
  std::vector<simulated_job> jobs{job("a", profile, 5)};
  sim_options options;
  options.faults = {{"a", 19, runtime::injected_fault::kind::restart}};
  schedule::exclusive_policy exclusive;
  const auto result = simulate(jobs, exclusive, gpu(64 * MiB), {}, options);
  const auto& a = named(result, "a");
  EXPECT_EQ(a.status, runtime::job_status::completed) << a.error;
  EXPECT_EQ(a.restarts, 1);
  EXPECT_EQ(a.iteration_log.size(), 5u);
  EXPECT_NEAR(a.end_s, 5 * 0.9 + 0.25, 1e-9);
  // The try cut short is on record: from the third iteration's start to the cut.
  ASSERT_EQ(a.restarted_attempts.size(), 1u);
  EXPECT_NEAR(a.restarted_attempts[0].start_s, 2 * 0.9, 1e-9);
  EXPECT_NEAR(a.restarted_attempts[0].end_s, 2 * 0.9 + 0.25, 1e-9);
  EXPECT_NEAR(a.iteration_log[2].start_s, 2 * 0.9 + 0.25, 1e-9);
}

/// Holds 8 MiB, takes 40 MiB at 0.2 s and 40 more at 0.4 s, returns both at 0.8 s of 1 s.
std::shared_ptr<job_profile> two_step_profile() {
  auto profile = flat_profile(1, 0.5, 8 * MiB, 0);
  const auto step = static_cast<std::int64_t>(40 * MiB);
  profile->held.steps = {{0.2, step}, {0.4, step}, {0.8, -2 * step}};
  profile->peak_live_bytes = 88 * MiB;
  return profile;
}

TEST(Simulator, AnIterationWaitingForABudgetRaiseRecordsItsWait) {
  // The budget falls to 60 MiB at 0.3 s: the iteration holds 48 MiB and wants 40 more at 0.4 s,
  // which waits (a raise is still to come) until the budget is back at 1 s.
  const std::vector<runtime::budget_change> changes{{0.3, 60 * MiB, 0}, {1.0, 200 * MiB, 0}};
  std::vector<simulated_job> jobs{job("a", two_step_profile(), 2)};
  schedule::exclusive_policy exclusive;
  const auto result = simulate(jobs, exclusive, gpu(256 * MiB), changes);
  const auto& a = named(result, "a");
  ASSERT_EQ(a.status, runtime::job_status::completed) << a.error;
  ASSERT_EQ(a.iteration_log.size(), 2u);
  EXPECT_NEAR(a.iteration_log[0].memory_wait_s, 0.6, 1e-9);
  EXPECT_NEAR(a.iteration_log[0].end_s - a.iteration_log[0].start_s, 1.6, 1e-9);
  EXPECT_EQ(a.iteration_log[1].memory_wait_s, 0);
  EXPECT_EQ(a.iteration_log[0].group_wait_s, 0);
}

TEST(Simulator, IterationsStuckUnderALoweredBudgetRestartOneOfThemInsteadOfFailingIt) {
  // Once profiled (each job's first iteration alone), side by side under scrooge from 2 s, each
  // at 48 MiB when the budget falls to 110 MiB at 2.3 s: at 2.4 s both want 40 MiB more
  // (136 > 110) and neither can finish. One lets go and runs again; nobody fails, and the
  // budget holds.
  const std::vector<runtime::budget_change> changes{{2.3, 110 * MiB, 0}};
  std::vector<simulated_job> jobs{job("a", two_step_profile(), 4), job("b", two_step_profile(), 4)};
  schedule::scrooge_policy scrooge(
      200 * MiB,
      {.ramp_start = 1, .ramp_iterations = 0, .fallback_threshold = 0.25, .claim_margin = 0});
  std::ostringstream timeline;
  sim_options options;
  options.timeline = &timeline;
  const auto result = simulate(jobs, scrooge, gpu(256 * MiB), changes, options);
  EXPECT_EQ(result.failed_jobs(), 0u);
  std::int64_t restarts = 0;
  for (const auto& j : result.jobs) {
    EXPECT_EQ(j.status, runtime::job_status::completed) << j.name << ": " << j.error;
    EXPECT_EQ(j.iteration_log.size(), 4u) << j.name;
    restarts += j.restarts;
  }
  EXPECT_EQ(restarts, 1) << timeline.str();
  for (const auto& j : result.jobs) {
    ASSERT_EQ(j.restarted_attempts.size(), static_cast<std::size_t>(j.restarts)) << j.name;
    for (const auto& attempt : j.restarted_attempts) EXPECT_NEAR(attempt.end_s, 2.4, 1e-6);
  }
  EXPECT_NE(timeline.str().find("iteration_restart"), std::string::npos);
  EXPECT_LE(result.peak_reserved_bytes, 200 * MiB);
}

TEST(Simulator, TheSameSeedGivesTheSameRunAndJitterChangesIt) {
  schedule::temporal_policy policy_a, policy_b, policy_c;
  const std::vector<simulated_job> jobs{job("a", flat_profile(1, 1), 5),
                                        job("b", flat_profile(1, 1), 5)};
  sim_options noisy;
  noisy.jitter = 0.1;
  noisy.seed = 7;
  const auto first = simulate(jobs, policy_a, gpu(), {}, noisy);
  const auto second = simulate(jobs, policy_b, gpu(), {}, noisy);
  EXPECT_DOUBLE_EQ(first.makespan_s, second.makespan_s);
  noisy.seed = 8;
  EXPECT_NE(simulate(jobs, policy_c, gpu(), {}, noisy).makespan_s, first.makespan_s);
  EXPECT_NE(first.makespan_s, 10);
}

TEST(Simulator, BudgetScheduleTakesEffectAtItsTime) {
  schedule::spatial_policy policy;
  const std::vector<runtime::budget_change> changes{{1.5, 50 * MiB, 0}};
  // 10 + 60 MiB fit in 100 MiB, not in 50. The second iteration took its 60 MiB at 1.25 s and
  // keeps them past the change (a lowered budget never breaks what is held); the third is
  // refused at 2.25 s.
  const auto result = simulate({job("a", flat_profile(1, 1, 10 * MiB, 60 * MiB), 4)}, policy,
                               gpu(100 * MiB), changes);
  ASSERT_EQ(result.budget_changes.size(), 1u);
  EXPECT_DOUBLE_EQ(result.budget_changes[0].at_s, 1.5);
  EXPECT_TRUE(result.jobs[0].out_of_memory);
  EXPECT_EQ(result.jobs[0].iterations, 2);
  EXPECT_DOUBLE_EQ(result.jobs[0].end_s, 2.25);
}

class parks_everyone final : public schedule::policy {
 public:
  [[nodiscard]] std::string_view name() const override { return "parker"; }
  [[nodiscard]] schedule::decision may_start(schedule::job_id, double) override {
    return schedule::decision::wait_for_event();
  }
};

TEST(Simulator, APolicyThatParksEveryJobFailsThemWithAClearError) {
  parks_everyone policy;
  const auto result =
      simulate({job("a", flat_profile(1, 1), 1), job("b", flat_profile(1, 1), 1)}, policy, gpu());
  EXPECT_EQ(result.failed_jobs(), 2u);
  EXPECT_NE(result.jobs[0].error.find("policy 'parker' left every job (a, b) waiting"),
            std::string::npos)
      << result.jobs[0].error;
}

TEST(Simulator, AJobWithoutOperationsIsAUsageError) {
  schedule::spatial_policy policy;
  auto empty = std::make_shared<job_profile>();
  EXPECT_THROW(static_cast<void>(simulate({job("a", empty, 1)}, policy, gpu())), usage_error);
}

TEST(Simulator, TimelineListsIterationsAndHeldBytes) {
  schedule::spatial_policy policy;
  std::ostringstream csv;
  sim_options options;
  options.timeline = &csv;
  static_cast<void>(simulate({job("a", flat_profile(1, 1), 1)}, policy, gpu(), {}, options));
  EXPECT_EQ(csv.str(),
            "time_s,job,event,held_bytes\n0.000000,a,iteration_start,10485760\n"
            "1.000000,a,iteration_end,10485760\n1.000000,a,completed,0\n");
}

TEST(RegionReplay, HeldRegionsFollowThePoolsOwnLogic) {
  job_profile profile;
  profile.model = "toy";
  profile.persistent_tensors = {3 * MiB};
  profile.operations = {{"forward", 1, 1, 0}, {"backward", 1, 1, 0}};
  const auto big = static_cast<std::int64_t>(5 * MiB);
  profile.steps = {{0.0, big, memory::alloc_kind::feature_map},
                   {0.5, big, memory::alloc_kind::feature_map},
                   {1.5, -big, memory::alloc_kind::feature_map},
                   {2.0, -big, memory::alloc_kind::feature_map}};
  replay_regions(profile, 2 * MiB);
  // Persistent: 3 MiB in persistent regions (4 MiB). Each 5 MiB map takes a run of three
  // 2 MiB regions, returned when freed.
  EXPECT_EQ(profile.held.held_at_start, 4 * MiB);
  EXPECT_EQ(profile.held.peak(), 16 * MiB);
  EXPECT_EQ(profile.held.held_at_end(), profile.held.held_at_start);
  EXPECT_EQ(profile.peak_live_bytes, 13 * MiB);
  EXPECT_DOUBLE_EQ(profile.held.duration_s, 2);
}

TEST(RegionReplay, UnbalancedStepsAreRefusedWithTheReason) {
  job_profile profile;
  profile.model = "toy";
  profile.operations = {{"op", 1, 1, 0}};
  profile.steps = {{0.0, 1024, memory::alloc_kind::temporary}};
  try {
    replay_regions(profile, 2 * MiB);
    FAIL() << "an unbalanced profile was accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("not all freed"), std::string::npos) << e.what();
  }
  profile.steps = {{0.0, -1024, memory::alloc_kind::temporary}};
  EXPECT_THROW(replay_regions(profile, 2 * MiB), config_error);
}

}  // namespace
}  // namespace tandem::sim
