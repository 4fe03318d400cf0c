// The TENSILE planner (tensile_planner.cpp): on hand-made sequences whose answers are worked out
// in the comments, and on random CNN-like jobs (rapidcheck) that the joint plans validate, that
// no copy queues on the shared channel, that no operation waits for a swap-in, and that a budget
// at or above the lowest peak swapping reaches is met.

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/joint_planner.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint {
namespace {

using testing::sequence_builder;

/// 1 byte per second makes copy times read as bytes.
cost_options slow_link(double bytes_per_s = 1.0) {
  return {.copy_bandwidth = bytes_per_s};
}

/// `seconds` of other work as operations of 1 s: the executor, and so the planner, starts copies
/// only as operations start and end (tensile_planner.cpp, polls).
void idle(sequence_builder& b, const std::string& name, int seconds, phase where = phase::forward) {
  for (int i = 0; i < seconds; ++i) b.op(name + std::to_string(i), 1, where);
}

/// f0 [0, 1] makes A (100 B) and B (40 B), f1 [1, 2] reads them, `wait_s` of other work, mk
/// [2 + wait, 3 + wait] makes C (60 B), 3 s more, bc [6 + wait, 7 + wait] reads C (its last
/// read), 16 s more, b1 reads A and B. other_bytes 10. The peak, 210 B, is C's life: from mk's
/// start to bc's end, with A and B idle all through it (their last read ended at 2, the next
/// starts 16 s after bc). f0..f1 and b1 hold 150 B whatever is planned.
access_sequence idle_around_peak(int wait_s) {
  sequence_builder b("idle-around-peak");
  const auto f0 = b.op("f0", 1);
  const auto f1 = b.op("f1", 1);
  idle(b, "wait", wait_s);
  const auto mk = b.op("mk", 1);
  idle(b, "wait2", 3);
  const auto bc = b.op("bc", 1, phase::backward);
  idle(b, "wait3", 16, phase::backward);
  const auto b1 = b.op("b1", 1, phase::backward);
  b.tensor("A", 100, f0, {f1, b1});
  b.tensor("B", 40, f0, {f1, b1});
  b.tensor("C", 60, mk, {bc});
  b.other_bytes(10);
  return b.get();
}

TEST(Tensile, SwapsTheLargestTensorsAtThePeakWhenTheirCopiesFitTheIdleTime) {
  // At 10 B/s with a 16 s wait: the peak starts at 18. A's copy out takes 10 s (2-12), B's 4 s
  // (12-16): both done by 18. Their copies in come as late as they can at an operation's start,
  // 1 ns clear of the reader and of each other: A's 28-38, B's 23-27, after C is gone. The peak
  // over C's life drops to 70 B; f0..f1 and b1 hold 150 B: the new peak, which no swap can lower
  // (A and B are read then).
  const auto s = idle_around_peak(16);
  const auto p = make_planner("tensile")->make_plan(s, {.budget_bytes = 0, .costs = slow_link(10)});
  validate(p, s);
  ASSERT_EQ(p.decisions.size(), 2u);
  EXPECT_EQ(p.decisions[0].tensor, 0u);  // A first: the largest
  EXPECT_EQ(p.decisions[1].tensor, 1u);
  const auto planned = predict(s, p, slow_link(10));
  const auto vanilla = predict(s, plan{}, slow_link(10));
  EXPECT_EQ(vanilla.peak_bytes, 210u);
  EXPECT_EQ(planned.peak_bytes, 150u);
  EXPECT_EQ(planned.stall_s, 0.0);
  EXPECT_DOUBLE_EQ(planned.iteration_s, vanilla.iteration_s);
  EXPECT_EQ(planned.swapped_out_bytes, 140u);
  EXPECT_NEAR(planned.copies[0].in_done_s, 38.0, 1e-6);  // A back a second before b1 starts
  EXPECT_NEAR(planned.copies[1].in_done_s, 27.0, 1e-6);
}

TEST(Tensile, LeavesATensorWhoseCopyOutCannotBeDoneByThePeak) {
  // A 6 s wait: the peak starts at 8. A's copy out (10 s from 2) cannot be done by then; B's
  // (2-6) can. B alone is swapped; the peak over C's life is 170 B, A not movable at it.
  const auto s = idle_around_peak(6);
  const auto p = make_planner("tensile")->make_plan(s, {.budget_bytes = 0, .costs = slow_link(10)});
  ASSERT_EQ(p.decisions.size(), 1u);
  EXPECT_EQ(p.decisions[0].tensor, 1u);
  const auto planned = predict(s, p, slow_link(10));
  EXPECT_EQ(planned.stall_s, 0.0);
  EXPECT_EQ(planned.peak_bytes, 170u);
}

TEST(Tensile, CapsTheShareOfAJobsTensorsSwapped) {
  // Three tensors, a ratio of 0.5: one may be swapped (A, the largest).
  const auto s = idle_around_peak(16);
  const auto p = make_tensile_planner({.max_swap_ratio = 0.5, .recompute = true, .max_rounds = 64})
                     ->make_plan(s, {.budget_bytes = 0, .costs = slow_link(10)});
  ASSERT_EQ(p.decisions.size(), 1u);
  EXPECT_EQ(p.decisions[0].tensor, 0u);
}

TEST(Tensile, JobsShareOneChannel) {
  // Two such jobs started together at 10 B/s: both peaks start at 18. The first job's A takes
  // the channel 2-12 and its B 12-16; the second job's A and B would have to start by 8 and 14
  // to be out by 18, and the channel is busy then: only the first job swaps. No copy queues,
  // nothing waits.
  const auto s = idle_around_peak(16);
  const std::vector<joint_job> jobs{{&s, 1.0}, {&s, 1.0}};
  const auto tensile = make_planner("tensile");
  const auto* joint = joint_planning_of(*tensile);
  ASSERT_NE(joint, nullptr);
  const auto plans = joint->make_joint_plan(jobs, {.budget_bytes = 0, .costs = slow_link(10)});
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].decisions.size(), 2u);
  EXPECT_TRUE(plans[1].decisions.empty());
  const std::vector<planned_job> priced{{&s, &plans[0]}, {&s, &plans[1]}};
  const auto predicted = predict_together(priced, slow_link(10));
  for (const auto& pr : predicted) EXPECT_EQ(pr.stall_s, 0.0);
  // 150 + 150 at f0..f1 now; 420 before.
  EXPECT_EQ(system_peak_of(predicted).bytes, 300u);
}

TEST(Tensile, SwapsOptimizerStateAcrossIterations) {
  // A momentum (50 B) read only by the step, the last operation; act (30 B) made at 10 and
  // read at 31. The momentum's stretch across iterations, from the step to the next one's, is
  // idle through the peak (act's life, from 10): out right after the step (43-48 at 10 B/s: 0-5
  // of the next iteration), back after act is gone (36-41, from the last operation start at
  // which it is done before the step at 42).
  sequence_builder b("optimizer");
  idle(b, "pre", 10);
  const auto f0 = b.op("f0", 1);
  idle(b, "mid", 20);
  const auto b0 = b.op("b0", 1, phase::backward);
  idle(b, "wait", 10, phase::backward);
  const auto step = b.op("step", 1, phase::optimizer, op_kind::optimizer);
  b.tensor("act", 30, f0, {b0});
  b.tensor("momentum", 50, std::nullopt, {step}, tensor_role::optimizer_state);
  const auto& s = b.get();
  const auto p = make_planner("tensile")->make_plan(s, {.budget_bytes = 0, .costs = slow_link(10)});
  ASSERT_EQ(p.decisions.size(), 1u);
  EXPECT_EQ(p.decisions[0].tensor, 1u);
  EXPECT_TRUE(p.decisions[0].wraps);
  EXPECT_EQ(p.decisions[0].released_after, 1u);
  EXPECT_EQ(p.decisions[0].needed_at, 1u);
  const auto planned = predict(s, p, slow_link(10));
  EXPECT_DOUBLE_EQ(planned.copies[0].out_done_s, 48.0);
  EXPECT_NEAR(planned.copies[0].in_done_s, 41.0, 1e-6);
  EXPECT_EQ(planned.stall_s, 0.0);
  EXPECT_EQ(predict(s, plan{}, slow_link(10)).peak_bytes, 80u);
  // The momentum alone: until its copy out completes (5 s into the iteration), back for the step.
  EXPECT_EQ(planned.peak_bytes, 50u);
  EXPECT_EQ(planned.curve.front().bytes, 50u);
}

TEST(Tensile, RecomputesByMspsWhenSwappingCannotReachTheBudget) {
  // At 0.001 B/s nothing can be swapped. x.out (1 B) lives through; f0 makes A (100 B, read by
  // b1), f1 makes B (40 B, read by b2); other 9 B. The peak, 150 B, starts with f1 at 2; A is
  // idle then (f0 ended at 2), B is being made. Budget 110: recomputing A (MSPS 100 B/s) leaves
  // 50 B there, and A comes back for b1 after B is gone: 110 B, within the budget.
  sequence_builder b("recompute");
  const auto x = b.op("x", 1);
  const auto f0 = b.op("f0", 1);
  const auto f1 = b.op("f1", 1);
  b.op("idle", 5);
  const auto b2 = b.op("b2", 1, phase::backward);
  const auto b1 = b.op("b1", 1, phase::backward);
  b.tensor("x.out", 1, x, {f0, f1, b1});
  b.tensor("A", 100, f0, {b1});
  b.tensor("B", 40, f1, {b2});
  b.other_bytes(9);
  const auto& s = b.get();
  const auto p =
      make_planner("tensile")->make_plan(s, {.budget_bytes = 110, .costs = slow_link(0.001)});
  validate(p, s);
  ASSERT_EQ(p.decisions.size(), 1u);
  EXPECT_EQ(p.decisions[0].what, action::recompute);
  EXPECT_EQ(p.decisions[0].tensor, 1u);
  const auto planned = predict(s, p, slow_link(0.001));
  EXPECT_EQ(planned.peak_bytes, 110u);
  EXPECT_DOUBLE_EQ(planned.recompute_s, 1.0);
  // Without recomputation the budget is out of reach: nothing is planned.
  EXPECT_TRUE(make_tensile_planner({.max_swap_ratio = 1, .recompute = false, .max_rounds = 64})
                  ->make_plan(s, {.budget_bytes = 110, .costs = slow_link(0.001)})
                  .decisions.empty());
}

TEST(Tensile, RefusesOptionsOutOfRange) {
  EXPECT_THROW(
      (void)make_tensile_planner({.max_swap_ratio = 0, .recompute = true, .max_rounds = 1}),
      usage_error);
  EXPECT_THROW(
      (void)make_tensile_planner({.max_swap_ratio = 1.5, .recompute = true, .max_rounds = 1}),
      usage_error);
  EXPECT_THROW(
      (void)make_tensile_planner({.max_swap_ratio = 1, .recompute = true, .max_rounds = 0}),
      usage_error);
  const auto s = idle_around_peak(16);
  const std::vector<joint_job> bad_ratio{{&s, 0.0}};
  const auto tensile = make_planner("tensile");
  EXPECT_THROW((void)joint_planning_of(*tensile)->make_joint_plan(bad_ratio, {}), usage_error);
  const std::vector<joint_job> no_sequence{{nullptr, 1.0}};
  EXPECT_THROW((void)joint_planning_of(*tensile)->make_joint_plan(no_sequence, {}), usage_error);
}

TEST(JointPlanning, OtherPlannersPlanJobByJobForAnEqualShare) {
  const auto s = testing::small_vgg();
  const auto capuchin = make_planner("capuchin");
  EXPECT_EQ(joint_planning_of(*capuchin), nullptr);
  const auto vanilla = predict(s, plan{}).peak_bytes;
  const std::vector<joint_job> jobs{{&s, 1.0}, {&s, 1.0}};
  const auto plans = plan_jobs(*capuchin, jobs, {.budget_bytes = vanilla, .costs = {}});
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].budget_bytes, vanilla / 2);
  EXPECT_EQ(plans[0], capuchin->make_plan(s, {.budget_bytes = vanilla / 2, .costs = {}}));
}

TEST(JointPlanning, SystemPeakAddsTheCurvesAtEachInstant) {
  prediction a;
  a.curve = {{0, 10}, {1, 30}, {3, 5}};
  prediction b;
  b.curve = {{0, 4}, {2, 20}, {3, 50}};
  // 0: 14; 1: 34; 2: 50; 3: 55.
  const std::vector<prediction> both{a, b};
  const auto peak = system_peak_of(both);
  EXPECT_EQ(peak.bytes, 55u);
  EXPECT_EQ(peak.at_s, 3.0);
}

// ---- random jobs ----

access_sequence random_cnn(int layers, int seed) {
  std::vector<testing::layer_spec> spec;
  for (int k = 0; k < layers; ++k) {
    const auto scale = static_cast<std::size_t>(1 + (seed * 7 + k * 13) % 9);
    const bool conv = (k + seed) % 2 == 0;
    spec.push_back({"l" + std::to_string(k), conv ? op_kind::convolution : op_kind::elementwise,
                    scale << 18, conv ? 1e-3 * static_cast<double>(scale) : 2e-4,
                    conv ? (scale << 14) : 0});
  }
  return testing::cnn_sequence(spec, 1u << 19, "random-cnn", seed % 3 == 0 ? 1e-4 : 0);
}

RC_GTEST_PROP(TensileProperty, JointPlansValidateNeverQueueNeverWaitAndReachAReachableBudget, ()) {
  const auto job_count = *rc::gen::inRange(1, 4);
  std::vector<access_sequence> sequences;
  for (int j = 0; j < job_count; ++j)
    sequences.push_back(random_cnn(*rc::gen::inRange(2, 14), *rc::gen::inRange(0, 1000)));
  const cost_options costs{.copy_bandwidth = *rc::gen::element(1e9, 4e9, 12e9, 50e9)};
  std::vector<joint_job> jobs;
  for (const auto& s : sequences) jobs.push_back({&s, *rc::gen::element(0.25, 0.5, 1.0)});
  const auto tensile = make_planner("tensile");
  const auto* joint = joint_planning_of(*tensile);

  std::vector<plan> nothing(sequences.size());
  std::vector<planned_job> vanilla_jobs;
  for (std::size_t j = 0; j < sequences.size(); ++j)
    vanilla_jobs.push_back({&sequences[j], &nothing[j]});
  const auto vanilla = predict_together(vanilla_jobs, costs);

  const auto check = [&](const std::vector<plan>& plans) {
    RC_ASSERT(plans.size() == sequences.size());
    std::vector<planned_job> priced;
    for (std::size_t j = 0; j < sequences.size(); ++j) {
      validate(plans[j], sequences[j]);
      priced.push_back({&sequences[j], &plans[j]});
      std::set<std::size_t> swapped;
      for (const auto& d : plans[j].decisions) {
        if (d.what == action::swap) swapped.insert(d.tensor);
      }
      RC_ASSERT(static_cast<double>(swapped.size()) <=
                jobs[j].max_swap_ratio * static_cast<double>(sequences[j].tensors.size()));
    }
    const auto predicted = predict_together(priced, costs);
    std::vector<std::pair<double, double>> busy;
    bool wraps = false;
    for (std::size_t j = 0; j < predicted.size(); ++j) {
      for (const auto& d : plans[j].decisions) wraps = wraps || d.wraps;
      RC_ASSERT(predicted[j].stall_s <= 1e-6 * vanilla[j].iteration_s);
      for (std::size_t k = 0; k < plans[j].decisions.size(); ++k) {
        if (plans[j].decisions[k].what != action::swap) continue;
        const auto& c = predicted[j].copies[k];
        RC_ASSERT(c.out_started_s - c.out_issued_s <= 1e-6);
        RC_ASSERT(c.in_started_s - c.in_issued_s <= 1e-6);
        busy.emplace_back(c.out_started_s, c.out_done_s);
        busy.emplace_back(c.in_started_s, c.in_done_s);
      }
    }
    // The steady state: copies out across iterations that run past the next iteration's start
    // overlap its start (prediction::carried_copies).
    const double period = predicted.front().next_iteration_s;
    const auto own = busy.size();
    for (std::size_t i = 0; i < own; ++i) {
      if (busy[i].second > period)
        busy.emplace_back(busy[i].first - period, busy[i].second - period);
    }
    std::sort(busy.begin(), busy.end());
    for (std::size_t i = 1; i < busy.size(); ++i)
      RC_ASSERT(busy[i].first >= busy[i - 1].second - 1e-9);
    RC_TAG(wraps ? "swaps across iterations" : "no swap across iterations");
    return system_peak_of(predicted).bytes;
  };

  const auto lowest = check(joint->make_joint_plan(jobs, {.budget_bytes = 0, .costs = costs}));
  RC_ASSERT(lowest <= system_peak_of(vanilla).bytes);
  const auto slack = *rc::gen::inRange<std::size_t>(0, 1u << 20);
  const auto budget = lowest + slack;
  const auto reached =
      check(joint->make_joint_plan(jobs, {.budget_bytes = budget, .costs = costs}));
  RC_ASSERT(reached <= budget);
}

}  // namespace
}  // namespace tandem::footprint
