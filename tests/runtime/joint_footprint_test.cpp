// The device's joint planning of tensile jobs (src/runtime/joint_footprint.hpp): jobs join as
// their iterations are recorded, every arrival and departure plans the others again, and each
// job learns of its new plan once.

#include "joint_footprint.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "../footprint/synthetic_sequences.hpp"
#include "tandem/footprint/cost_model.hpp"

namespace tandem::runtime::detail {
namespace {

using footprint::testing::small_vgg;

TEST(JointFootprint, TellsWhichPlannersPlanJointly) {
  EXPECT_TRUE(joint_footprint::plans_jointly("tensile"));
  EXPECT_TRUE(joint_footprint::plans_jointly("tensile:across=0"));
  EXPECT_FALSE(joint_footprint::plans_jointly("capuchin"));
  EXPECT_FALSE(joint_footprint::plans_jointly("checkpoint"));
}

TEST(JointFootprint, EveryArrivalAndDeparturePlansTheOthersAgainAndEachLearnsOfItOnce) {
  joint_footprint joint({});
  const auto sequence = small_vgg();
  const auto peak = footprint::predict(sequence, footprint::plan{}).peak_bytes;
  std::uint64_t first_seen = 0;
  const auto first = joint.join(1, "tensile", sequence, peak / 2, first_seen);
  EXPECT_GT(first_seen, 0u);
  EXPECT_FALSE(joint.newer_plan(1, first_seen));  // its own, just made, came with its version
  EXPECT_FALSE(first.decisions.empty());

  std::uint64_t second_seen = 0;
  static_cast<void>(joint.join(2, "tensile", sequence, peak / 2, second_seen));
  EXPECT_FALSE(joint.newer_plan(2, second_seen));
  // The second's arrival planned the first again, for one copy channel and the summed budget.
  const auto again = joint.newer_plan(1, first_seen);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(joint.newer_plan(1, first_seen));
  EXPECT_EQ(joint.replans("tensile"), 2u);

  // Another planner spec is another group: nobody else is planned again.
  std::uint64_t third_seen = 0;
  static_cast<void>(joint.join(3, "tensile:across=0", sequence, peak / 2, third_seen));
  EXPECT_FALSE(joint.newer_plan(1, first_seen));
  EXPECT_EQ(joint.replans("tensile"), 2u);

  // A departure plans the rest of its group again; a job that never joined changes nothing.
  joint.leave(2);
  EXPECT_TRUE(joint.newer_plan(1, first_seen));
  EXPECT_FALSE(joint.newer_plan(3, third_seen));
  joint.leave(42);
  EXPECT_EQ(joint.replans("tensile"), 3u);
  joint.leave(1);
  joint.leave(3);
  EXPECT_EQ(joint.replans("capuchin"), 0u);
}

TEST(JointFootprint, MeasuredTimesThatDriftPlanTheGroupAgainAndSteadyOnesDoNot) {
  joint_footprint joint({});
  const auto sequence = small_vgg();
  const auto peak = footprint::predict(sequence, footprint::plan{}).peak_bytes;
  std::uint64_t first_seen = 0;
  std::uint64_t second_seen = 0;
  static_cast<void>(joint.join(1, "tensile", sequence, peak / 2, first_seen));
  static_cast<void>(joint.join(2, "tensile", sequence, peak / 2, second_seen));
  static_cast<void>(joint.newer_plan(1, first_seen));
  std::vector<double> as_planned;
  for (const auto& op : sequence.operations) as_planned.push_back(op.duration_s);
  // The times the plans were made for: nothing to do, however often they come.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(joint.measured(1, as_planned));
  EXPECT_FALSE(joint.measured(1, {}));  // an iteration that did not match: nothing measured
  EXPECT_EQ(joint.drift_replans("tensile"), 0u);
  EXPECT_FALSE(joint.newer_plan(2, second_seen));
  // Every operation twice as slow: the moving average (beta 0.8) passes the 10% threshold at
  // once, and both jobs get new plans, made from the new estimate.
  std::vector<double> slower;
  for (const auto d : as_planned) slower.push_back(2 * d);
  EXPECT_TRUE(joint.measured(1, slower));
  EXPECT_EQ(joint.drift_replans("tensile"), 1u);
  EXPECT_TRUE(joint.newer_plan(1, first_seen));
  EXPECT_TRUE(joint.newer_plan(2, second_seen));
  // The plans now stand on the moved estimate, 0.8 * d + 0.2 * 2d: times that keep to it are
  // no drift.
  std::vector<double> estimate;
  for (const auto d : as_planned) estimate.push_back(1.2 * d);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(joint.measured(1, estimate));
  EXPECT_EQ(joint.drift_replans("tensile"), 1u);
  EXPECT_FALSE(joint.measured(42, slower));  // a job that never joined
  joint.leave(1);
  joint.leave(2);
}

TEST(JointFootprint, JobsJoinAndLeaveFromTheirOwnThreads) {
  joint_footprint joint({});
  const auto sequence = small_vgg(3, 1u << 20);
  std::vector<std::thread> jobs;
  for (memory::job_id job = 0; job < 4; ++job) {
    jobs.emplace_back([&, job] {
      std::uint64_t seen = 0;
      const auto plan = joint.join(job, "tensile", sequence, 0, seen);
      EXPECT_NO_THROW(footprint::validate(plan, sequence));
      for (int i = 0; i < 20; ++i) {
        if (auto newer = joint.newer_plan(job, seen)) {
          EXPECT_NO_THROW(footprint::validate(*newer, sequence));
        }
      }
      joint.leave(job);
    });
  }
  for (auto& t : jobs) t.join();
  EXPECT_GE(joint.replans("tensile"), 4u);
}

}  // namespace
}  // namespace tandem::runtime::detail
