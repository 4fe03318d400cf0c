// online_replanner: plans are due on arrival, departure, budget change and drift past the
// threshold, not otherwise; the EWMA follows TENSILE's formula; the estimate keeps idle time.

#include "tandem/footprint/online_replanner.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"

namespace tandem::footprint {
namespace {

/// Drift judged from the first measurement on (`settle` 0) unless asked otherwise.
online_replanner make(double threshold = 0.1, std::size_t settle = 0) {
  return online_replanner(std::shared_ptr<const planner>(make_planner("tensile")),
                          {.ewma_beta = 0.5,
                           .drift_threshold = threshold,
                           .settle_iterations = settle,
                           .budget_bytes = 0,
                           .costs = {}});
}

TEST(OnlineReplanner, ArrivalDepartureAndBudgetMakePlansDue) {
  auto online = make();
  EXPECT_EQ(online.due(), replan_reason::none);
  online.add_job(7, testing::small_vgg());
  EXPECT_EQ(online.due(), replan_reason::arrival);
  auto plans = online.replan_if_needed();
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans.at(7).planner, "tensile");
  EXPECT_EQ(online.due(), replan_reason::none);
  EXPECT_TRUE(online.replan_if_needed().empty());
  online.add_job(9, testing::small_vgg());
  EXPECT_EQ(online.replan_if_needed().size(), 2u);
  online.remove_job(7);
  EXPECT_EQ(online.due(), replan_reason::departure);
  EXPECT_EQ(online.replan_if_needed().size(), 1u);
  online.set_budget(1u << 20);
  EXPECT_EQ(online.due(), replan_reason::budget);
  EXPECT_EQ(online.replans(), 3u);  // the budget's plan is due, not made yet
}

TEST(OnlineReplanner, MeasuredTimesMoveTheEstimateByEwmaAndDriftPastTheThresholdReplans) {
  auto online = make(0.1);
  testing::sequence_builder b;
  b.op("a", 1.0);
  b.op("b", 1.0, phase::backward, op_kind::other, 0.5);  // 0.5 s idle before it
  online.add_job(1, b.get());
  static_cast<void>(online.replan());
  // 0.5 * 1 + 0.5 * 1.1 = 1.05: moved 0.05 of a 2 s iteration, under 0.1.
  online.record_duration(1, 0, 1.1);
  EXPECT_DOUBLE_EQ(online.estimate_of(1).operations[0].duration_s, 1.05);
  EXPECT_DOUBLE_EQ(online.estimate_of(1).operations[1].start_s, 1.55);  // idle time kept
  EXPECT_EQ(online.due(), replan_reason::none);
  // Both ops measured at 1.3: a = 1.175, b = 1.15: moved 0.325 of 2 s, past 0.1.
  const std::vector<double> iteration{1.3, 1.3};
  online.record_iteration(1, iteration);
  EXPECT_EQ(online.due(), replan_reason::drift);
  EXPECT_EQ(online.replan_if_needed().size(), 1u);
  EXPECT_EQ(online.due(), replan_reason::none);  // the plan is now made for these times
}

TEST(OnlineReplanner, TimeShiftedBetweenOperationsIsDriftOnlyWhenItIsLarge) {
  auto online = make(0.1);
  testing::sequence_builder b;
  b.op("a", 1.0);
  b.op("b", 1.0);
  online.add_job(1, b.get());
  static_cast<void>(online.replan());
  // a 0.25 s slower, b 0.25 s faster (estimates 1.125 and 0.875): no net change, 0.125 of
  // the iteration shifted, under 3 x 0.1.
  online.record_iteration(1, std::vector<double>{1.25, 0.75});
  EXPECT_EQ(online.due(), replan_reason::none);
  // Further, still with no net change (measured 1.875 and 0.125: estimates 1.5 and 0.5): 0.5
  // of the iteration shifted, past 0.3.
  online.record_iteration(1, std::vector<double>{1.875, 0.125});
  EXPECT_EQ(online.due(), replan_reason::drift);
}

TEST(OnlineReplanner, TimesMeasuredUnderANewPlanAreTheReferenceNotADrift) {
  auto online = make(0.1, 3);
  testing::sequence_builder b;
  b.op("a", 1.0);
  b.op("b", 1.0);
  online.add_job(1, b.get());
  static_cast<void>(online.replan());
  // The plan slows its job by 40% (its copies share the cores): no drift while it settles,
  // and then the mean of the three iterations is what drift is judged from.
  for (const double a : {1.3, 1.5, 1.4}) {
    EXPECT_EQ(online.due(), replan_reason::none);
    online.record_iteration(1, std::vector<double>{a, 1.4});
  }
  EXPECT_EQ(online.due(), replan_reason::none);
  EXPECT_DOUBLE_EQ(online.estimate_of(1).operations[0].duration_s, 1.4);
  // Steady under the plan: none; then a real change (both 30% slower) is a drift.
  online.record_iteration(1, std::vector<double>{1.42, 1.38});
  EXPECT_EQ(online.due(), replan_reason::none);
  online.record_iteration(1, std::vector<double>{1.9, 1.9});
  EXPECT_EQ(online.due(), replan_reason::drift);
  // The next plan settles again.
  static_cast<void>(online.replan_if_needed());
  online.record_iteration(1, std::vector<double>{3.0, 3.0});
  EXPECT_EQ(online.due(), replan_reason::none);
}

TEST(OnlineReplanner, AZeroThresholdNeverReplansOnDrift) {
  auto online = make(0);
  online.add_job(1, testing::small_vgg());
  static_cast<void>(online.replan());
  std::vector<double> slower;
  for (const auto& op : testing::small_vgg().operations) slower.push_back(3 * op.duration_s);
  online.record_iteration(1, slower);
  EXPECT_EQ(online.due(), replan_reason::none);
  EXPECT_THROW(
      online_replanner(std::shared_ptr<const planner>(make_planner("tensile")),
                       {.ewma_beta = 0.5, .drift_threshold = -1, .budget_bytes = 0, .costs = {}}),
      usage_error);
}

TEST(OnlineReplanner, RefusesWrongUse) {
  EXPECT_THROW(online_replanner(nullptr, {}), usage_error);
  EXPECT_THROW(
      online_replanner(std::shared_ptr<const planner>(make_planner("tensile")),
                       {.ewma_beta = 1, .drift_threshold = 0.1, .budget_bytes = 0, .costs = {}}),
      usage_error);
  auto online = make();
  online.add_job(1, testing::small_vgg());
  EXPECT_THROW(online.add_job(1, testing::small_vgg()), usage_error);
  EXPECT_THROW(online.remove_job(2), usage_error);
  EXPECT_THROW(online.record_duration(1, 100000, 1.0), usage_error);
  EXPECT_THROW(online.record_duration(1, 0, -1.0), usage_error);
  const std::vector<double> short_iteration{1.0};
  EXPECT_THROW(online.record_iteration(1, short_iteration), usage_error);
}

}  // namespace
}  // namespace tandem::footprint
