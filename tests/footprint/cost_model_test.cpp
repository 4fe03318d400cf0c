// The cost model on sequences small enough to work out on paper (the expected numbers below are
// derived in the comments), and on random sequences and plans against a brute-force peak.

#include "tandem/footprint/cost_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"

namespace tandem::footprint {
namespace {

using testing::sequence_builder;

const cost_options slow_channel{1000};  // 1000 bytes a second: a 1000-byte copy takes 1 s

/// make_x [0,1) makes x (1000 B); pad [1,2); make_z [2,4) makes z (3000 B, never read);
/// make_y [4,7) makes y (2000 B); pad2 [7,8); use [8,9) reads x and y.
/// Kept: x over [0,9), z over [2,4), y over [4,9): peak 4000 over [2,4).
/// The executor, and so the cost model, looks at triggers as operations start and end: at 0, 1,
/// 2, 4, 7, 8 and 9 ("Polls", cost_model.cpp).
access_sequence swap_case() {
  sequence_builder b("swap-case");
  const auto make_x = b.op("make_x", 1);
  b.op("pad", 1);
  const auto make_z = b.op("make_z", 2);
  const auto make_y = b.op("make_y", 3);
  b.op("pad2", 1);
  const auto use = b.op("use", 1, phase::backward);
  b.tensor("x", 1000, make_x, {use});
  b.tensor("z", 3000, make_z, {});
  b.tensor("y", 2000, make_y, {use});
  return b.get();
}

plan swap_x(double in_delay_s) {
  plan p;
  p.decisions.push_back({0, action::swap, 0, 1, {0, 0}, {3, in_delay_s}, false});
  return p;
}

TEST(CostModel, EmptyPlanReproducesTheSequence) {
  const auto s = swap_case();
  const auto kept = predict(s, plan{}, slow_channel);
  EXPECT_DOUBLE_EQ(kept.iteration_s, 9);
  EXPECT_EQ(kept.peak_bytes, 4000u);
  EXPECT_EQ(kept.curve, (std::vector<memory_point>{{0, 1000}, {2, 4000}, {4, 3000}, {9, 0}}));
  EXPECT_EQ(kept.stall_s, 0);
  EXPECT_EQ(kept.swapped_out_bytes + kept.swapped_in_bytes, 0u);
}

// z is make_z's scratch (made and released by it, never read): its operation holds what the
// recording measured it held at once, not each piece.
TEST(CostModel, AnOperationsScratchCountsAsTheMostItHeldAtOnce) {
  auto s = swap_case();
  const auto extra = s.tensors.size();
  s.tensors.push_back(s.tensors[1]);  // a second 3000-byte piece of make_z's scratch
  s.tensors[extra].name = "z2";
  EXPECT_EQ(predict(s, plan{}, slow_channel).peak_bytes, 7000u);  // all at once: 1000 + 6000
  s.operations[2].scratch_peak_bytes = 3000;                      // one piece after the other
  const auto measured = predict(s, plan{}, slow_channel);
  EXPECT_EQ(measured.peak_bytes, 4000u);
  EXPECT_EQ(measured.curve, (std::vector<memory_point>{{0, 1000}, {2, 4000}, {4, 3000}, {9, 0}}));
}

TEST(CostModel, SwapHiddenBehindComputeCostsNoTime) {
  // Out: issued when make_x ends (1), done at 2, its memory free from the poll then (pad's
  // end). In: make_y starts at 4, + 3 s: 7, make_y's end, issued then, done at 8, just as `use`
  // may start. x is out over [2,7): the peak falls to 3000.
  const auto planned = predict(swap_case(), swap_x(3), slow_channel);
  EXPECT_DOUBLE_EQ(planned.iteration_s, 9);
  EXPECT_EQ(planned.stall_s, 0);
  EXPECT_EQ(planned.peak_bytes, 3000u);
  EXPECT_EQ(planned.curve,
            (std::vector<memory_point>{{0, 1000}, {2, 3000}, {4, 2000}, {7, 3000}, {9, 0}}));
  EXPECT_EQ(planned.swapped_out_bytes, 1000u);
  EXPECT_EQ(planned.swapped_in_bytes, 1000u);
  EXPECT_EQ(planned.recompute_s, 0);
}

TEST(CostModel, APrefetchTriggeredInsideAnOperationIsIssuedAtItsEndAndStalls) {
  // In triggered at 4 + 3.5 = 7.5, inside pad2: issued when pad2 ends (8), done at 9. `use`
  // waits 1 s and ends at 10.
  const auto planned = predict(swap_case(), swap_x(3.5), slow_channel);
  EXPECT_DOUBLE_EQ(planned.stall_s, 1);
  EXPECT_DOUBLE_EQ(planned.iteration_s, 10);
  EXPECT_EQ(planned.copies[0], (copy_timing{1, 1, 2, 8, 8, 9}));
  EXPECT_EQ(planned.curve,
            (std::vector<memory_point>{{0, 1000}, {2, 3000}, {4, 2000}, {8, 3000}, {10, 0}}));
}

TEST(CostModel, SwapOutWaitsForItsTriggerAndTheReleaseAccess) {
  // x is released when make_x ends (1); its copy out is triggered by pad (starts at 1) + 0.5,
  // seen when pad ends: issued at 2, done at 3, its memory free from the next poll, make_z's
  // end (4). In triggered at pad2's start (7), issued then, done at 8.
  plan p;
  p.decisions.push_back({0, action::swap, 0, 1, {1, 0.5}, {4, 0}, false});
  const auto planned = predict(swap_case(), p, slow_channel);
  EXPECT_EQ(planned.copies[0], (copy_timing{2, 2, 3, 7, 7, 8}));
  EXPECT_EQ(planned.curve,
            (std::vector<memory_point>{{0, 1000}, {2, 4000}, {4, 2000}, {7, 3000}, {9, 0}}));
  EXPECT_EQ(planned.peak_bytes, 4000u);
  EXPECT_EQ(planned.stall_s, 0);
}

TEST(CostModel, ACopyInTriggeredInsideAnOperationIsSeenAtItsEnd) {
  // Out as above (2-3), in triggered at make_z's start + 1.5 = 3.5, seen at make_z's end (4),
  // where the poll sees the copy out's completion first: x comes back at 4, done at 5. Had the
  // trigger been make_z's start (2), the copy out would not have been done: called off, x never
  // leaves.
  plan p;
  p.decisions.push_back({0, action::swap, 0, 1, {1, 0.5}, {2, 1.5}, false});
  const auto late = predict(swap_case(), p, slow_channel);
  EXPECT_EQ(late.copies[0], (copy_timing{2, 2, 3, 4, 4, 5}));
  EXPECT_EQ(late.called_off_bytes, 0u);
  p.decisions[0].swap_in = {2, 0};
  const auto early = predict(swap_case(), p, slow_channel);
  EXPECT_EQ(early.called_off_bytes, 1000u);
  EXPECT_EQ(early.curve, predict(swap_case(), plan{}, slow_channel).curve);
}

/// make_a [0,1) makes a (100 B); make_b [1,3) reads a, makes b (200 B); make_c [3,4) makes c
/// (1000 B, never read); use_b [4,5) reads b; use_a [5,6) reads a.
/// Kept: peak 1300 over [3,4).
access_sequence recompute_case() {
  sequence_builder b("recompute-case");
  const auto make_a = b.op("make_a", 1);
  const auto make_b = b.op("make_b", 2);
  const auto make_c = b.op("make_c", 1);
  const auto use_b = b.op("use_b", 1, phase::backward);
  const auto use_a = b.op("use_a", 1, phase::backward);
  b.tensor("a", 100, make_a, {make_b, use_a});
  b.tensor("b", 200, make_b, {use_b});
  b.tensor("c", 1000, make_c, {});
  return b.get();
}

TEST(CostModel, RecomputeRerunsTheCreatorAndRebuildsADroppedInputFirst) {
  // a and b leave when make_b ends (3). Before use_b: b's rerun needs a, dropped too: make_a
  // runs again over [4,5) (a back at 4), make_b over [5,7) (b back at 5), use_b over [7,8)
  // (b released at 8), use_a finds a in memory: [8,9). 1 + 2 s of reruns.
  plan p;
  p.decisions.push_back({0, action::recompute, 1, 2, {}, {}, false});
  p.decisions.push_back({1, action::recompute, 0, 1, {}, {}, false});
  const auto s = recompute_case();
  EXPECT_EQ(predict(s, plan{}).peak_bytes, 1300u);
  const auto planned = predict(s, p);
  EXPECT_DOUBLE_EQ(planned.iteration_s, 9);
  EXPECT_DOUBLE_EQ(planned.recompute_s, 3);
  EXPECT_EQ(planned.stall_s, 0);
  EXPECT_EQ(planned.peak_bytes, 1000u);
  EXPECT_EQ(planned.curve,
            (std::vector<memory_point>{
                {0, 100}, {1, 300}, {3, 1000}, {4, 100}, {5, 300}, {8, 100}, {9, 0}}));
  const auto m = measure(s, p);
  EXPECT_EQ(m.vanilla_peak_bytes, 1300u);
  EXPECT_EQ(m.planned_peak_bytes, 1000u);
  EXPECT_DOUBLE_EQ(m.msr, 1 - 1000.0 / 1300.0);
  EXPECT_DOUBLE_EQ(m.eor, 0.5);
  EXPECT_DOUBLE_EQ(m.cbr, m.msr / 0.5);
  EXPECT_EQ(m.recomputed_tensors, 2u);
  EXPECT_EQ(m.swapped_tensors, 0u);
  EXPECT_EQ(m.bytes_moved, 0u);
}

TEST(CostModel, MeasuresAPlanThatLosesNothing) {
  const auto m = measure(swap_case(), swap_x(3), slow_channel);
  EXPECT_DOUBLE_EQ(m.msr, 0.25);
  EXPECT_EQ(m.eor, 0);
  EXPECT_EQ(m.cbr, std::numeric_limits<double>::infinity());
  EXPECT_EQ(m.swapped_tensors, 1u);
  EXPECT_EQ(m.bytes_moved, 2000u);
  EXPECT_EQ(measure(swap_case(), plan{}).cbr, 0);
}

TEST(CostModel, JobsQueueTheirCopiesOnOneChannel) {
  // Both jobs issue their copy out at 1: the first runs over [1,2), the second over [2,3), its
  // memory free from make_z's end (4). Both issue their copy in at 7: the first over [7,8), the
  // second over [8,9), so the second job's `use` waits until 9 (stall 1) and ends at 10.
  const auto s = swap_case();
  const auto p = swap_x(3);
  const std::vector<planned_job> jobs{{&s, &p}, {&s, &p}};
  const auto both = predict_together(jobs, slow_channel);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_DOUBLE_EQ(both[0].iteration_s, 9);
  EXPECT_EQ(both[0].stall_s, 0);
  EXPECT_DOUBLE_EQ(both[1].iteration_s, 10);
  EXPECT_DOUBLE_EQ(both[1].stall_s, 1);
  EXPECT_EQ(both[1].curve,
            (std::vector<memory_point>{{0, 1000}, {2, 4000}, {4, 2000}, {7, 3000}, {10, 0}}));
}

/// load0..load3 [0,4), a second each; f [4,5) reads w; a [5,8) makes act (3000 B); b [8,9)
/// reads act, makes g (100 B, a gradient: it does not exist before b); step [9,10) reads w, p2
/// and g. w (1000 B) and p2 (500 B) are persistent.
access_sequence across_case() {
  sequence_builder b("across");
  for (int i = 0; i < 4; ++i) b.op("load" + std::to_string(i), 1);
  const auto f = b.op("f", 1);
  const auto a = b.op("a", 3);
  const auto use = b.op("b", 1, phase::backward);
  const auto step = b.op("step", 1, phase::optimizer, op_kind::optimizer);
  b.tensor("w", 1000, std::nullopt, {f, step}, tensor_role::parameter);
  b.tensor("p2", 500, std::nullopt, {step}, tensor_role::optimizer_state);
  b.tensor("act", 3000, a, {use});
  b.tensor("g", 100, use, {step}, tensor_role::gradient);
  return b.get();
}

TEST(CostModel, AStretchAcrossIterationsIsPricedInTheSteadyState) {
  // w out after the step (issued at 10, done at 11: 1 s into the next iteration, its memory
  // free from load0's end), back at load2's start (2-3, before f at 4). p2 out from the
  // iteration's start, triggered at load0 + 0.5 and so issued at load0's end (1), after the
  // previous iteration's copy of w, still on the channel over [0,1): it runs over [1,1.5), its
  // memory free from load1's end (2); back at b (8-8.5).
  plan p;
  p.decisions.push_back({0, action::swap, 2, 1, {7, 0}, {2, 0}, true});
  p.decisions.push_back({1, action::swap, 0, 1, {0, 0.5}, {6, 0}, false});
  const auto s = across_case();
  const auto planned = predict(s, p, slow_channel);
  EXPECT_DOUBLE_EQ(planned.iteration_s, 10);
  EXPECT_DOUBLE_EQ(planned.next_iteration_s, 10);
  EXPECT_EQ(planned.stall_s, 0);
  EXPECT_EQ(planned.carried_copies, (std::vector<std::pair<double, double>>{{0, 1}}));
  EXPECT_EQ(planned.copies[0], (copy_timing{10, 10, 11, 2, 2, 3}));
  EXPECT_EQ(planned.copies[1], (copy_timing{1, 1, 1.5, 8, 8, 8.5}));
  // w held until its copy out is seen complete (1); at 2 p2 goes and w comes back; g not
  // before b makes it; w's copy out at the end frees it in the next iteration.
  EXPECT_EQ(planned.curve,
            (std::vector<memory_point>{
                {0, 1500}, {1, 500}, {2, 1000}, {5, 4000}, {8, 4600}, {9, 1600}, {10, 1500}}));
  EXPECT_EQ(planned.peak_bytes, 4600u);
  EXPECT_EQ(planned.swapped_out_bytes, 1500u);
  EXPECT_EQ(planned.swapped_in_bytes, 1500u);
}

TEST(CostModel, ACopyInAcrossIterationsIsCalledOffWhereTheCopyOutBeforeItIsNotDone) {
  // w of 3000 B: its copy out (3 s) ends 3 s into the next iteration, after its copy in's
  // trigger (load0 + 0.5, seen at 1). As the executor does, the swap is called off: w never
  // left, so it is held from the start, no copy in runs and f does not wait. Every iteration
  // lasts 10, and the copy out, issued at 10, again ends at 3.
  auto s = across_case();
  s.tensors[0].bytes = 3000;
  plan p;
  p.decisions.push_back({0, action::swap, 2, 1, {7, 0}, {0, 0.5}, true});
  const auto planned = predict(s, p, slow_channel);
  EXPECT_DOUBLE_EQ(planned.iteration_s, 10);
  EXPECT_DOUBLE_EQ(planned.stall_s, 0);
  EXPECT_EQ(planned.copies[0], (copy_timing{10, 10, 13, 0, 0, 0, true}));
  EXPECT_EQ(planned.curve.front(), (memory_point{0, 3500}));
  EXPECT_EQ(planned.peak_bytes, predict(s, plan{}, slow_channel).peak_bytes);
  EXPECT_EQ(planned.swapped_in_bytes, 0u);
  EXPECT_EQ(planned.called_off_bytes, 3000u);
}

TEST(CostModel, ASwapDueBackBeforeItsCopyOutIsIssuedNeverLeaves) {
  // x's prefetch is triggered at make_x's start, before make_x ends and x may leave: the swap is
  // called off before its copy out is issued, so the channel runs nothing and nothing waits.
  plan p = swap_x(0);
  p.decisions[0].swap_in = {0, 0};
  const auto planned = predict(swap_case(), p, slow_channel);
  EXPECT_EQ(planned.curve, predict(swap_case(), plan{}, slow_channel).curve);
  EXPECT_DOUBLE_EQ(planned.iteration_s, 9);
  EXPECT_EQ(planned.stall_s, 0);
  EXPECT_EQ(planned.called_off_bytes, 1000u);
  EXPECT_EQ(planned.copies[0], (copy_timing{0, 0, 0, 0, 0, 0, true}));
}

TEST(CostModel, ASwapNeededBackBeforeItsCopyOutIsDoneIsCalledOff) {
  // At 100 B/s x's copy out runs over [1,11), past its copy in's trigger (make_y + 3 = 7): x
  // never leaves, so the curve is the one kept; `use` does not wait, and the iteration ends when
  // the unused copy is done (11), 2 s after `use`.
  const auto planned = predict(swap_case(), swap_x(3), cost_options{100});
  const auto kept = predict(swap_case(), plan{}, cost_options{100});
  EXPECT_EQ(planned.curve, kept.curve);
  EXPECT_DOUBLE_EQ(planned.iteration_s, 11);
  EXPECT_DOUBLE_EQ(planned.stall_s, 2);
  EXPECT_EQ(planned.swapped_out_bytes + planned.swapped_in_bytes, 0u);
  EXPECT_EQ(planned.called_off_bytes, 1000u);
  EXPECT_EQ(planned.copies[0], (copy_timing{1, 1, 11, 0, 0, 0, true}));
}

TEST(CostModel, RefusesInvalidPlansAndChannels) {
  plan p;
  p.decisions.push_back({7, action::swap, 0, 1, {}, {}, false});
  EXPECT_THROW((void)predict(swap_case(), p), config_error);
  EXPECT_THROW((void)predict(swap_case(), plan{}, cost_options{0}), usage_error);
  const std::vector<planned_job> missing{{nullptr, &p}};
  EXPECT_THROW((void)predict_together(missing), usage_error);
}

// ---- random sequences and plans ----

access_sequence random_sequence(std::mt19937& rng) {
  std::uniform_int_distribution<std::size_t> op_count(2, 14);
  std::uniform_real_distribution<double> duration(0.05, 2.0);
  std::uniform_real_distribution<double> coin(0, 1);
  std::uniform_int_distribution<std::size_t> bytes(1, 5000);
  sequence_builder b("random");
  const auto n = op_count(rng);
  double previous_s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto where = i < n / 2 ? phase::forward : phase::backward;
    // Idle time before some operations, and some that start before the one before has ended
    // (recorded operations may overlap).
    const double draw = coin(rng);
    const double gap_s = draw < 0.3 ? duration(rng) / 4 : draw < 0.45 ? -previous_s / 2 : 0;
    previous_s = duration(rng);
    b.op("op" + std::to_string(i), previous_s, where, op_kind::other, gap_s);
  }
  std::uniform_int_distribution<std::size_t> tensor_count(1, 3 * n);
  const auto tensors = tensor_count(rng);
  for (std::size_t t = 0; t < tensors; ++t) {
    const bool persistent = coin(rng) < 0.15;
    std::optional<std::size_t> creator;
    if (!persistent) creator = std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    std::vector<std::size_t> readers;
    for (std::size_t op = creator ? *creator + 1 : 0; op < n; ++op) {
      if (coin(rng) < 0.3) readers.push_back(op);
    }
    std::optional<std::size_t> freed_after;
    if (creator && coin(rng) < 0.2) {
      const auto last = readers.empty() ? *creator : readers.back();
      freed_after = std::uniform_int_distribution<std::size_t>(last, n - 1)(rng);
    }
    b.tensor("t" + std::to_string(t), bytes(rng), creator, readers,
             persistent ? tensor_role::parameter : tensor_role::activation, freed_after);
  }
  b.other_bytes(bytes(rng));
  return b.get();
}

/// Random decisions, each kept only when the plan with it still validates.
plan random_plan(const access_sequence& s, std::mt19937& rng) {
  plan p;
  std::uniform_real_distribution<double> coin(0, 1);
  std::uniform_int_distribution<std::size_t> pick(0, s.tensors.size() - 1);
  for (int attempt = 0; attempt < 12; ++attempt) {
    const auto t = pick(rng);
    const auto reads = s.tensors[t].read_by.size();
    if (reads == 0) continue;
    decision d;
    d.tensor = t;
    d.released_after = std::uniform_int_distribution<std::size_t>(0, reads - 1)(rng);
    d.needed_at = d.released_after + 1;
    d.what = coin(rng) < 0.5 ? action::swap : action::recompute;
    const auto needed_op = *s.access_op(t, d.needed_at);
    if (needed_op == 0) continue;
    std::uniform_int_distribution<std::size_t> trigger_op(0, needed_op - 1);
    d.swap_out = {trigger_op(rng), coin(rng) < 0.5 ? 0 : coin(rng)};
    d.swap_in = {trigger_op(rng), coin(rng) < 0.5 ? 0 : coin(rng)};
    p.decisions.push_back(d);
    try {
      validate(p, s);
    } catch (const config_error&) {
      p.decisions.pop_back();
    }
  }
  return p;
}

/// The most held at the start of any operation, tensor by tensor over the recorded times: a
/// tensor is held from its creator's start until its release operation's end.
std::size_t brute_force_peak(const access_sequence& s) {
  std::size_t peak = 0;
  for (const auto& op : s.operations) {
    std::size_t held = s.other_bytes;
    for (std::size_t t = 0; t < s.tensors.size(); ++t) {
      const auto& x = s.tensors[t];
      if (!x.created_by) {
        held += x.bytes;
        continue;
      }
      const auto& released = s.operations[*s.release_op(t)];
      if (s.operations[*x.created_by].start_s <= op.start_s &&
          op.start_s < released.start_s + released.duration_s)
        held += x.bytes;
    }
    peak = std::max(peak, held);
  }
  return peak;
}

TEST(CostModelProperty, RandomPlansNeverBeatKeepingEverything) {
  std::mt19937 rng(20240611);
  std::size_t planned_with_decisions = 0;
  for (int round = 0; round < 300; ++round) {
    const auto s = random_sequence(rng);
    ASSERT_NO_THROW(validate(s));
    const auto kept = predict(s, plan{});
    ASSERT_EQ(kept.iteration_s, s.iteration_s()) << "round " << round;
    ASSERT_EQ(kept.peak_bytes, brute_force_peak(s)) << "round " << round;
    ASSERT_EQ(kept.stall_s, 0);

    const auto p = random_plan(s, rng);
    if (!p.decisions.empty()) ++planned_with_decisions;
    const cost_options options{std::uniform_real_distribution<double>(500, 20000)(rng)};
    const auto planned = predict(s, p, options);
    std::size_t swapped = 0;
    double reruns = 0;
    for (const auto& d : p.decisions) {
      if (d.what == action::swap) {
        swapped += s.tensors[d.tensor].bytes;
      } else {
        reruns += s.operations[*s.tensors[d.tensor].created_by].duration_s;
      }
    }
    EXPECT_GE(planned.iteration_s, kept.iteration_s - 1e-9) << "round " << round;
    EXPECT_LE(planned.peak_bytes, kept.peak_bytes) << "round " << round;
    // Every swap comes back in or is called off (its copy out not done when it was needed).
    EXPECT_EQ(planned.swapped_in_bytes + planned.called_off_bytes, swapped) << "round " << round;
    EXPECT_LE(planned.swapped_in_bytes, planned.swapped_out_bytes) << "round " << round;
    EXPECT_LE(planned.swapped_out_bytes, swapped) << "round " << round;
    EXPECT_NEAR(planned.recompute_s, reruns, 1e-9) << "round " << round;
    EXPECT_GE(planned.stall_s, 0);
    ASSERT_FALSE(planned.curve.empty());
    EXPECT_EQ(planned.curve.back().bytes, kept.curve.back().bytes) << "round " << round;
  }
  EXPECT_GT(planned_with_decisions, 100u);  // the property was exercised on real plans
}

}  // namespace
}  // namespace tandem::footprint
