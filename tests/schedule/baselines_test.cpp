// The baseline policies on hand-driven event sequences.

#include "tandem/schedule/baselines.hpp"

#include <gtest/gtest.h>

#include <set>

#include "tandem/common/error.hpp"
#include "tandem/schedule/policy_capabilities.hpp"
#include "tandem/schedule/registry.hpp"

namespace tandem::schedule {
namespace {

const decision start = decision::start();
const decision wait = decision::wait_for_event();

void arrive(policy& p, job_id id, double at = 0) {
  p.on_arrival(job_info::make(id, "j", at, 10), at);
}

TEST(Exclusive, RunsJobsOneAtATimeInArrivalOrder) {
  exclusive_policy p;
  arrive(p, 2);
  arrive(p, 0);
  arrive(p, 1);
  EXPECT_EQ(p.may_start(0, 0), wait);
  EXPECT_EQ(p.may_start(2, 0), start) << "the first to arrive goes first, whatever its id";
  p.on_iteration_start(2, 0);
  p.on_iteration_end(2, {}, 1);
  EXPECT_EQ(p.may_start(0, 1), wait) << "to completion: job 2 keeps the device between iterations";
  EXPECT_EQ(p.may_start(2, 1), start);
  p.on_departure(2, 2);
  EXPECT_EQ(p.may_start(1, 2), wait);
  EXPECT_EQ(p.may_start(0, 2), start);
}

TEST(Temporal, AlternatesIterationsRoundRobin) {
  temporal_policy p;
  for (job_id id : {0u, 1u, 2u}) arrive(p, id);
  std::vector<job_id> order;
  double now = 0;
  for (int step = 0; step < 9; ++step) {
    std::optional<job_id> granted;
    for (job_id id : {2u, 0u, 1u}) {  // ask in a scrambled order
      if (p.may_start(id, now) == start) {
        ASSERT_FALSE(granted) << "two jobs may start at once";
        granted = id;
      }
    }
    ASSERT_TRUE(granted);
    p.on_iteration_start(*granted, now);
    for (job_id id : {0u, 1u, 2u}) {
      if (id != *granted) {
        EXPECT_EQ(p.may_start(id, now), wait) << "an iteration is running";
      }
    }
    p.on_iteration_end(*granted, {}, now + 1);
    order.push_back(*granted);
    now += 1;
  }
  // Whoever asks first starts; after that every round gives each job exactly one turn.
  for (std::size_t round = 0; round < 3; ++round) {
    std::set<job_id> turn(order.begin() + 3 * static_cast<long>(round),
                          order.begin() + 3 * static_cast<long>(round) + 3);
    EXPECT_EQ(turn.size(), 3u) << "round " << round;
  }
  EXPECT_EQ(std::vector<job_id>(order.begin(), order.begin() + 3),
            std::vector<job_id>(order.begin() + 3, order.begin() + 6))
      << "the round-robin order repeats";
}

TEST(Temporal, AJobBusyOnTheHostDoesNotHoldOthersUp) {
  temporal_policy p;
  arrive(p, 0);
  arrive(p, 1);
  EXPECT_EQ(p.may_start(0, 0), start);
  p.on_iteration_start(0, 0);
  p.on_iteration_end(0, {}, 1);
  // Job 1 has not asked yet; job 0 asks again and may go rather than wait for a silent job.
  EXPECT_EQ(p.may_start(0, 1), start);
  p.on_iteration_start(0, 1);
  EXPECT_EQ(p.may_start(1, 1.5), wait);  // job 1 asks while job 0 runs
  p.on_iteration_end(0, {}, 2);
  EXPECT_EQ(p.may_start(0, 2), wait) << "job 1 is asking now: its turn";
  EXPECT_EQ(p.may_start(1, 2), start);
}

TEST(Temporal, ADepartureMidIterationFreesTheDevice) {
  temporal_policy p;
  arrive(p, 0);
  arrive(p, 1);
  EXPECT_EQ(p.may_start(0, 0), start);
  p.on_iteration_start(0, 0);
  p.on_departure(0, 0.5);  // failed mid-iteration
  EXPECT_EQ(p.may_start(1, 0.5), start);
}

TEST(Spatial, AlwaysStarts) {
  spatial_policy p;
  arrive(p, 0);
  arrive(p, 1);
  p.on_iteration_start(0, 0);
  EXPECT_EQ(p.may_start(1, 0), start);
  EXPECT_EQ(capabilities_of(p).partitions, nullptr) << "no per-job memory limit";
}

TEST(Static, SplitsTheBudgetIntoFixedPartitions) {
  static_partition_policy p(900, 3);
  arrive(p, 0);
  arrive(p, 1);
  EXPECT_EQ(p.memory_limit(0), 300u);
  EXPECT_EQ(p.memory_limit(1), 300u);
  EXPECT_FALSE(p.memory_limit(2)) << "not arrived";
  p.on_budget_change(600, 1);
  EXPECT_EQ(p.memory_limit(1), 200u);
  EXPECT_EQ(p.may_start(0, 1), start);
  EXPECT_THROW(static_partition_policy(900, 0), config_error);
}

TEST(Registry, MakesEveryPolicyByNameAndRejectsUnknownOnes) {
  for (const auto& name : policy_names()) {
    auto p = make_policy(name, {1000, 2, {}});
    EXPECT_EQ(p->name(), name);
  }
  try {
    (void)make_policy("lifo", {1000, 2, {}});
    FAIL() << "made an unknown policy";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("known policies: exclusive"), std::string::npos);
  }
}

TEST(Registry, ScroogeTakesItsOptionsAndRefusesBadOnes) {
  EXPECT_EQ(policy_option_names("scrooge"),
            (std::vector<std::string>{"ramp_start", "ramp_iterations", "fallback_threshold",
                                      "claim_margin", "weigh_waiting"}));
  EXPECT_EQ(
      make_policy("scrooge", {1000, 2, {{"ramp_start", 0.5}, {"ramp_iterations", 4}}})->name(),
      "scrooge");
  EXPECT_THROW((void)make_policy("scrooge", {1000, 2, {{"ramp_iterations", 2.5}}}), config_error);
  EXPECT_THROW((void)make_policy("scrooge", {1000, 2, {{"fallback_threshold", 0}}}), config_error);
  EXPECT_THROW((void)make_policy("scrooge", {1000, 2, {{"ramp_start", 2}}}), config_error);
  EXPECT_THROW((void)make_policy("scrooge", {1000, 2, {{"weigh_waiting", 2}}}), config_error);
  EXPECT_THROW((void)make_policy("scrooge", {1000, 2, {{"weigh_waiting", 0.5}}}), config_error);
}

}  // namespace
}  // namespace tandem::schedule
