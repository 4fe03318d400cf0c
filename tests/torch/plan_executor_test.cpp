// The plan executor on real libtorch training: swap and recompute plans give bitwise the losses
// of vanilla training, and what they send out leaves the pool.

#include "tandem/torch/plan_executor.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/copy_channel.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/models/optimizer.hpp"
#include "tandem/models/zoo.hpp"
#include "tandem/torch/access_recorder.hpp"
#include "tandem/torch/cpu_allocator.hpp"
#include "tandem/torch/job_binding.hpp"
#include "training_fixture.hpp"

namespace tandem::torch_support {
namespace {

using testing::live_meter;
using testing::make_trainee;
using testing::pool_of;
using testing::trainee;
using testing::training;
using testing::zoo;

/// Two layers with dropout between them: the zoo's models train without dropout.
class dropout_trainee final : public trainee {
 public:
  dropout_trainee() {
    torch::manual_seed(7);
    first_ = torch::nn::Linear(64, 256);
    second_ = torch::nn::Linear(256, 10);
  }
  torch::Tensor loss(std::int64_t iteration) override {
    auto data = torch::make_generator<at::CPUGeneratorImpl>(static_cast<std::uint64_t>(iteration));
    const auto input = torch::randn({32, 64}, data);
    const auto target = torch::randint(10, {32}, data);
    auto hidden = torch::dropout(torch::relu(first_->forward(input)), 0.3, true);
    hidden = torch::dropout(hidden * 2, 0.2, true);
    return torch::cross_entropy_loss(second_->forward(hidden), target);
  }
  std::vector<torch::Tensor> parameters() override {
    auto all = first_->parameters();
    for (const auto& p : second_->parameters()) all.push_back(p);
    return all;
  }

 private:
  torch::nn::Linear first_{nullptr};
  torch::nn::Linear second_{nullptr};
};

struct planned_run {
  std::vector<double> losses;
  std::vector<std::size_t> peaks;  ///< of the executed iterations
  execution_stats stats;
  footprint::plan plan;
  footprint::access_sequence sequence;
  std::vector<double> measured_s;  ///< what the last iteration's operations took
};

constexpr std::int64_t iterations = 5;

std::vector<double> vanilla_losses(const make_trainee& make, std::size_t& peak) {
  training run(make);
  std::vector<double> losses;
  peak = 0;
  for (std::int64_t i = 0; i < iterations; ++i) {
    std::size_t p = 0;
    losses.push_back(run.plain(i, p));
    if (i >= 2) peak = std::max(peak, p);
  }
  return losses;
}

/// Iteration 0 plain, iteration 1 recorded, the rest under the plan `make_plan` makes from it;
/// `measure`: whether the executor measures the operations' durations.
template <typename MakePlan>
planned_run run_planned(const make_trainee& make, MakePlan&& make_plan, bool measure = true) {
  training run(make);
  planned_run out;
  persistent_storages storages;
  out.sequence = run.warm_up_and_record(out.losses, storages);
  out.plan = make_plan(out.sequence);
  device::copy_channel channel(run.backend());
  plan_executor executor(run.pool(), run.job(), channel, out.sequence, out.plan, &run.meter(),
                         storages);
  executor.measure_durations(measure);
  for (std::int64_t i = 2; i < iterations; ++i) {
    std::size_t peak = 0;
    out.losses.push_back(run.execute(executor, i, peak));
    out.peaks.push_back(peak);
  }
  out.stats = executor.stats();
  out.measured_s = executor.measured_durations();
  return out;
}

std::size_t count(const footprint::plan& plan, footprint::action what) {
  return static_cast<std::size_t>(std::count_if(plan.decisions.begin(), plan.decisions.end(),
                                                [&](const auto& d) { return d.what == what; }));
}

footprint::plan by_planner(const std::string& name, const footprint::access_sequence& sequence,
                           double budget_share) {
  const auto vanilla = footprint::predict(sequence, footprint::plan{}).peak_bytes;
  const auto budget = static_cast<std::size_t>(budget_share * static_cast<double>(vanilla));
  return footprint::make_planner(name)->make_plan(sequence, {.budget_bytes = budget, .costs = {}});
}

void expect_bitwise(const std::vector<double>& expected, const std::vector<double>& got) {
  ASSERT_EQ(expected.size(), got.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(expected[i], got[i]) << "iteration " << i;  // bitwise: exact equality
}

TEST(PlanExecutor, SwappingEveryFeatureMapKeepsTheLossesBitwiseAndLowersThePoolsPeak) {
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo("resnet20", 16), vanilla_peak);
  const auto run = run_planned(zoo("resnet20", 16), [](const footprint::access_sequence& s) {
    return by_planner("vdnn-all", s, 0);
  });
  ASSERT_GT(count(run.plan, footprint::action::swap), 20u);
  expect_bitwise(expected, run.losses);
  EXPECT_EQ(run.stats.iterations, 3u);
  EXPECT_EQ(run.stats.diverged_iterations, 0u);
  EXPECT_EQ(run.stats.missed, 0u);
  // A swap whose copy out has not finished when the tensor is needed again is called off.
  EXPECT_GT(run.stats.swaps, 0u);
  EXPECT_LE(run.stats.swaps, 3 * count(run.plan, footprint::action::swap));
  EXPECT_GT(run.stats.swapped_out_bytes, 0u);
  EXPECT_EQ(run.stats.swapped_in_bytes, run.stats.swapped_out_bytes);
  // Swapped-out bytes leave the pool: every executed iteration peaks below vanilla.
  for (const auto peak : run.peaks) {
    EXPECT_LT(peak, vanilla_peak * 9 / 10)
        << format_bytes(peak) << " against " << format_bytes(vanilla_peak);
  }
}

/// `plan` with every swap-in of a tensor released in the forward pass issued at the backward
/// pass's first operation: they all come back at once, as prefetches that a slow copy engine or
/// a misjudged plan issue too early would, and the iteration peaks near its vanilla peak.
footprint::plan prefetching_early(footprint::plan plan, const footprint::access_sequence& s) {
  const auto backward = std::ranges::find_if(s.operations, [](const footprint::operation& op) {
    return op.where == footprint::phase::backward;
  });
  const auto first_backward = static_cast<std::size_t>(backward - s.operations.begin());
  for (auto& d : plan.decisions) {
    const auto release = s.access_op(d.tensor, d.released_after);
    if (d.what == footprint::action::swap && !d.wraps && release && *release < first_backward &&
        d.swap_in.op > first_backward) {
      d.swap_in = {first_backward, 0};
    }
  }
  return plan;
}

// Where an allocation would fail (here a swap-in issued too early under a budget the plan does
// not fit that way), the executor swaps tensors of its plan out of turn instead: the one read
// again latest that no operation under way reads. The iteration goes on within the budget, its
// losses bitwise those of vanilla training.
TEST(PlanExecutor, CallsOffASwapDueBackBeforeItLeftAsTheCostModelPricesIt) {
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo("resnet20", 8), vanilla_peak);
  // Every prefetch triggered at the start of the operation after which its tensor leaves.
  const auto run = run_planned(zoo("resnet20", 8), [](const footprint::access_sequence& s) {
    auto p = by_planner("vdnn-all", s, 0);
    for (auto& d : p.decisions) d.swap_in = {*s.access_op(d.tensor, d.released_after), 0};
    return p;
  });
  ASSERT_GT(count(run.plan, footprint::action::swap), 20u);
  expect_bitwise(expected, run.losses);
  EXPECT_EQ(run.stats.called_off, 3 * run.plan.decisions.size());
  EXPECT_EQ(run.stats.swaps, 0u);
  EXPECT_EQ(run.stats.swapped_out_bytes + run.stats.swapped_in_bytes, 0u);
  EXPECT_EQ(run.stats.diverged_iterations, 0u);
  const auto predicted = footprint::predict(run.sequence, run.plan);
  std::size_t planned_bytes = 0;
  for (const auto& d : run.plan.decisions) planned_bytes += run.sequence.tensors[d.tensor].bytes;
  EXPECT_EQ(predicted.called_off_bytes, planned_bytes);
  EXPECT_EQ(predicted.peak_bytes, footprint::predict(run.sequence, footprint::plan{}).peak_bytes);
}

TEST(PlanExecutor, MakesRoomOutOfTurnWhereAnAllocationWouldFailAndKeepsTheLossesBitwise) {
  const auto make = zoo("resnet20", 64);
  std::size_t ignored = 0;
  const auto expected = vanilla_losses(make, ignored);
  training run(make);
  std::vector<double> losses;
  persistent_storages storages;
  const auto sequence = run.warm_up_and_record(losses, storages);
  const auto vanilla_held = run.pool().stats(run.job()).peak_reserved_bytes;
  const auto plan = prefetching_early(by_planner("vdnn-all", sequence, 0), sequence);
  ASSERT_GT(count(plan, footprint::action::swap), 20u);
  device::copy_channel channel(run.backend());
  plan_executor executor(run.pool(), run.job(), channel, sequence, plan, &run.meter(), storages);
  // Three quarters of the vanilla iteration's regions: the early swap-ins cannot all fit.
  const auto budget = vanilla_held * 3 / 4 / (2 * MiB) * (2 * MiB);
  run.pool().set_budget(budget);
  for (std::int64_t i = 2; i < iterations; ++i) {
    std::size_t peak = 0;
    losses.push_back(run.execute(executor, i, peak));
  }
  expect_bitwise(expected, losses);
  const auto& stats = executor.stats();
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_GT(stats.evicted_bytes, 0u);
  EXPECT_EQ(stats.diverged_iterations, 0u);
  EXPECT_EQ(stats.swapped_in_bytes, stats.swapped_out_bytes) << "every tensor out came back";
  EXPECT_LE(run.pool().stats().peak_reserved_bytes, std::max(budget, vanilla_held))
      << "the budget held from where it was set";
  EXPECT_EQ(run.pool().pressure_relief_of(run.job()), nullptr)
      << "cleared when the iteration ended";
}

TEST(PlanExecutor, RecomputePlansKeepTheLossesBitwise) {
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo("resnet20", 16), vanilla_peak);
  for (const std::string planner : {"checkpoint", "superneurons", "capuchin"}) {
    const auto run = run_planned(zoo("resnet20", 16), [&](const footprint::access_sequence& s) {
      return by_planner(planner, s, 0.5);
    });
    SCOPED_TRACE(planner);
    expect_bitwise(expected, run.losses);
    EXPECT_EQ(run.stats.diverged_iterations, 0u);
    EXPECT_EQ(run.stats.missed, 0u);
    EXPECT_EQ(run.stats.recomputations, 3 * count(run.plan, footprint::action::recompute));
    for (const auto peak : run.peaks) EXPECT_LT(peak, vanilla_peak);
  }
}

// libtorch's C++ Linear on a 3-d input runs matmul, then adds the bias in place to what matmul
// made: recomputing that matmul once rebuilt its output without the bias, and BERT-mini's
// gradients came out wrong (its losses drifted from the second planned iteration on).
TEST(PlanExecutor, RecomputePlansOfATransformerKeepTheLossesBitwise) {
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo("bert_mini", 8), vanilla_peak);
  for (const std::string planner : {"checkpoint", "superneurons"}) {
    const auto run = run_planned(zoo("bert_mini", 8), [&](const footprint::access_sequence& s) {
      return by_planner(planner, s, 0.5);
    });
    SCOPED_TRACE(planner);
    ASSERT_GT(count(run.plan, footprint::action::recompute), 0u);
    expect_bitwise(expected, run.losses);
    EXPECT_EQ(run.stats.diverged_iterations, 0u);
  }
}

/// Every activation of a random operation, recomputed: dropout must draw the same mask again.
footprint::plan recompute_random(const footprint::access_sequence& s) {
  footprint::plan plan;
  plan.planner = "test";
  plan.model = s.model;
  plan.batch_size = s.batch_size;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    const auto& x = s.tensors[t];
    if (x.role != footprint::tensor_role::activation || !x.created_by) continue;
    if (!s.operations[*x.created_by].random) continue;
    // The stretch from its last forward access to its first read in the backward pass.
    std::size_t last_forward = 0;
    for (std::size_t a = 0; a < x.read_by.size(); ++a) {
      if (s.operations[x.read_by[a]].where == footprint::phase::forward) last_forward = a + 1;
    }
    if (last_forward >= x.read_by.size()) continue;
    plan.decisions.push_back({.tensor = t,
                              .what = footprint::action::recompute,
                              .released_after = last_forward,
                              .needed_at = last_forward + 1,
                              .swap_out = {},
                              .swap_in = {}});
    try {
      footprint::validate(plan, s);
    } catch (const config_error&) {
      plan.decisions.pop_back();
    }
  }
  return plan;
}

TEST(PlanExecutor, RecomputingDropoutReplaysTheGeneratorSoTheLossesStayBitwise) {
  std::size_t vanilla_peak = 0;
  const make_trainee mlp = [] { return std::make_unique<dropout_trainee>(); };
  const auto expected = vanilla_losses(mlp, vanilla_peak);
  const auto run = run_planned(mlp, recompute_random);
  ASSERT_GT(count(run.plan, footprint::action::recompute), 0u);
  expect_bitwise(expected, run.losses);
  EXPECT_EQ(run.stats.diverged_iterations, 0u);
  EXPECT_EQ(run.stats.recomputations, 3 * count(run.plan, footprint::action::recompute));
}

TEST(PlanExecutor, AnEmptyPlanChangesNothing) {
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo("resnet20", 8), vanilla_peak);
  const auto run = run_planned(zoo("resnet20", 8), [](const footprint::access_sequence& s) {
    return by_planner("none", s, 0);
  });
  expect_bitwise(expected, run.losses);
  EXPECT_EQ(run.stats.diverged_iterations, 0u);
  EXPECT_EQ(run.stats.swaps + run.stats.recomputations, 0u);
  // One computing time per operation, for TENSILE's online re-planning.
  ASSERT_EQ(run.measured_s.size(), run.sequence.operations.size());
  double total = 0;
  for (const auto d : run.measured_s) {
    EXPECT_GE(d, 0.0);
    total += d;
  }
  EXPECT_GT(total, 0.0);
}

/// A zoo model that notes whether any operation callback was installed on its thread while
/// it computed its loss.
class callback_probe final : public trainee {
 public:
  explicit callback_probe(std::shared_ptr<bool> followed)
      : inner_(zoo("resnet20", 8)()), followed_(std::move(followed)) {}
  torch::Tensor loss(std::int64_t iteration) override {
    *followed_ = at::hasThreadLocalCallbacks();
    return inner_->loss(iteration);
  }
  std::vector<torch::Tensor> parameters() override { return inner_->parameters(); }

 private:
  std::unique_ptr<trainee> inner_;
  std::shared_ptr<bool> followed_;
};

TEST(PlanExecutor, AnEmptyPlanWhoseDurationsNoOneWantsFollowsNoOperation) {
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo("resnet20", 8), vanilla_peak);
  for (const bool measure : {true, false}) {
    auto followed = std::make_shared<bool>(false);
    const auto run = run_planned(
        [&] { return std::make_unique<callback_probe>(followed); },
        [](const footprint::access_sequence& s) { return by_planner("none", s, 0); }, measure);
    expect_bitwise(expected, run.losses);
    EXPECT_EQ(*followed, measure) << "the last iteration's operations followed";
    // Not following them is no divergence: the allocations still match the sequence.
    EXPECT_EQ(run.stats.diverged_iterations, 0u);
    EXPECT_EQ(run.measured_s.empty(), !measure);
  }
}

enum class stretch { within, from_start, across };

/// Swaps of every parameter and optimizer state the recorder found: within the iteration (out
/// after its first read, back by the op before its second), from the iteration's start (out
/// when it begins, back by the op before its first read), or across the iteration boundary (out
/// after the step, back by the op before its first read of the next iteration).
footprint::plan swap_persistent(const footprint::access_sequence& s, stretch how) {
  footprint::plan p;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    const auto& x = s.tensors[t];
    if (x.created_by || x.read_by.size() < 2) continue;
    const bool within = how == stretch::within;
    const auto needed = within ? x.read_by[1] : x.read_by[0];
    if (needed == 0) continue;
    footprint::decision d{.tensor = t,
                          .what = footprint::action::swap,
                          .released_after = how == stretch::across ? x.read_by.size()
                                            : within               ? std::size_t{1}
                                                                   : std::size_t{0},
                          .needed_at = within ? std::size_t{2} : std::size_t{1},
                          .swap_out = {how == stretch::across ? x.read_by.back()
                                       : within               ? x.read_by[0]
                                                              : 0,
                                       0},
                          .swap_in = {needed - 1, 0},
                          .wraps = how == stretch::across};
    p.decisions.push_back(d);
    try {
      footprint::validate(p, s);
    } catch (const config_error&) {
      p.decisions.pop_back();  // a trigger the sequence does not allow: leave the tensor be
    }
  }
  return p;
}

/// Iteration 0 plain, 1 recorded, 2-4 under `swap_persistent`'s plan; what the job held in the
/// pool after iteration 1 and after the last.
struct persistent_run {
  std::vector<double> losses;
  execution_stats stats;
  std::size_t swapped = 0;  ///< decisions
  std::size_t held_before = 0;
  std::size_t held_after = 0;
  execution_stats first;  ///< after the first planned iteration
};

persistent_run run_persistent_swaps(stretch how) {
  training run(zoo("resnet20", 8));
  // Between iterations the job holds its weights, buffers and optimizer state only.
  const auto persistent_bytes = [&] { return run.pool().stats(run.job()).live_bytes; };
  persistent_run out;
  persistent_storages storages;
  const auto sequence = run.warm_up_and_record(out.losses, storages);
  out.held_before = persistent_bytes();
  const auto plan = swap_persistent(sequence, how);
  out.swapped = plan.decisions.size();
  device::copy_channel channel(run.backend());
  plan_executor executor(run.pool(), run.job(), channel, sequence, plan, &run.meter(), storages);
  for (std::int64_t i = 2; i < iterations; ++i) {
    std::size_t peak = 0;
    out.losses.push_back(run.execute(executor, i, peak));
    if (i == 2) out.first = executor.stats();
  }
  out.stats = executor.stats();
  out.held_after = persistent_bytes();
  return out;
}

/// run_persistent_swaps(how), held to the losses of vanilla training and to every decision met.
persistent_run checked_persistent_swaps(stretch how) {
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo("resnet20", 8), vanilla_peak);
  auto run = run_persistent_swaps(how);
  EXPECT_GT(run.swapped, 20u);
  expect_bitwise(expected, run.losses);
  EXPECT_EQ(run.stats.diverged_iterations, 0u);
  EXPECT_EQ(run.stats.missed, 0u);
  return run;
}

/// ResNet-20 at batch 8, warmed up and recorded, with `swap_persistent(how)`'s plan and an
/// executor for it; `expected`: vanilla training's losses.
struct persistent_plan {
  explicit persistent_plan(stretch how)
      : expected(vanilla_losses(zoo("resnet20", 8), vanilla_peak)),
        run(zoo("resnet20", 8)),
        sequence(run.warm_up_and_record(losses, storages)),
        plan(swap_persistent(sequence, how)),
        channel(run.backend()),
        executor(run.pool(), run.job(), channel, sequence, plan, &run.meter(), storages) {}
  std::size_t vanilla_peak = 0;
  std::vector<double> expected;
  training run;
  std::vector<double> losses;
  persistent_storages storages;
  footprint::access_sequence sequence;
  footprint::plan plan;
  device::copy_channel channel;
  plan_executor executor;
};

// An iteration cut short where its tensors cannot come back (no memory left): what is out stays
// on the host, and the executor runs the next iteration, whose readers bring the parameters
// back; the losses stay bitwise.
TEST(PlanExecutor, AnIterationCutShortWithNoRoomCarriesWhatIsOutIntoTheNextOne) {
  persistent_plan p(stretch::within);
  ASSERT_GT(p.plan.decisions.size(), 20u);
  auto& run = p.run;
  auto& losses = p.losses;
  auto& executor = p.executor;
  // The forward pass sent the parameters out after their first read; they cannot come back.
  EXPECT_FALSE(run.cut_after_forward(executor, 2)) << "end() left them on the host, no failure";
  EXPECT_GT(executor.stats().host_reads, 0u);
  for (std::int64_t i = 2; i < iterations; ++i) {
    std::size_t peak = 0;
    losses.push_back(run.execute(executor, i, peak));
  }
  expect_bitwise(p.expected, losses);
  EXPECT_EQ(executor.stats().swapped_in_bytes, executor.stats().swapped_out_bytes);
}

// Where no memory comes for a tensor due back (every prefetch and swap-in refused, as a gate
// that would fail the allocation does), its readers read it where it lies, in host memory
// (pinned, which a device reaches too): the iteration goes on rather than the job failing, its
// losses bitwise those of vanilla training. The parameters still out at its end stay there and
// come back at their first reader in the next iteration.
TEST(PlanExecutor, ReadsATensorInHostMemoryWhereNoRoomComesForItAndKeepsTheLossesBitwise) {
  persistent_plan p(stretch::within);
  ASSERT_GT(p.plan.decisions.size(), 20u);
  auto& run = p.run;
  auto& losses = p.losses;
  auto& executor = p.executor;
  losses.push_back(run.execute_refusing_swap_ins(executor, 2));
  const auto refused = executor.stats();
  EXPECT_GE(refused.host_reads, p.plan.decisions.size());
  EXPECT_GT(refused.host_read_bytes, 0u);
  EXPECT_EQ(refused.swapped_in_bytes, 0u);
  for (std::int64_t i = 3; i < iterations; ++i) {
    std::size_t peak = 0;
    losses.push_back(run.execute(executor, i, peak));
  }
  expect_bitwise(p.expected, losses);
  const auto& stats = executor.stats();
  EXPECT_EQ(stats.swapped_in_bytes, stats.swapped_out_bytes) << "every tensor out came back";
  EXPECT_EQ(stats.diverged_iterations, 0u);
  EXPECT_EQ(run.pool().stats(run.job()).out_of_memory, 0u) << "no failure counted for the job";
}

TEST(PlanExecutor, ParametersAndOptimizerStateSwappedWithinAnIterationKeepTheLossesBitwise) {
  const auto run = checked_persistent_swaps(stretch::within);
  EXPECT_GT(run.stats.swapped_out_bytes, 0u);
  EXPECT_EQ(run.stats.swapped_in_bytes, run.stats.swapped_out_bytes);
  EXPECT_EQ(run.held_after, run.held_before);  // all back
}

TEST(PlanExecutor, ParametersAndOptimizerStateSwappedAcrossIterationsKeepTheLossesBitwise) {
  const auto run = checked_persistent_swaps(stretch::across);
  EXPECT_GT(run.stats.swapped_in_bytes, 0u);
  // What the last iteration sent out stays out between iterations: the pool holds less.
  EXPECT_LT(run.held_after, run.held_before * 3 / 4)
      << format_bytes(run.held_after) << " against " << format_bytes(run.held_before);
}

// A new plan takes over between iterations (TENSILE's re-planning) while the old one's
// parameters are out across the boundary and no memory comes for them: they stay in host
// memory and pass to the new plan's executor, whose readers bring them back (here a plan that
// moves nothing else); the losses stay bitwise.
TEST(PlanExecutor, WhatTheOldPlanLeftOutPassesToTheNewOneWhereNoRoomComes) {
  persistent_plan p(stretch::across);
  ASSERT_GT(p.plan.decisions.size(), 20u);
  auto& run = p.run;
  auto& losses = p.losses;
  auto& old_plan = p.executor;
  std::size_t peak = 0;
  losses.push_back(run.execute(old_plan, 2, peak));
  plan_executor new_plan(run.pool(), run.job(), p.channel, p.sequence, {}, &run.meter(),
                         p.storages);
  run.bring_back_refusing_swap_ins(old_plan, &new_plan);
  EXPECT_GT(old_plan.stats().host_reads, 0u);
  for (std::int64_t i = 3; i < iterations; ++i) losses.push_back(run.execute(new_plan, i, peak));
  expect_bitwise(p.expected, losses);
  EXPECT_EQ(old_plan.stats().swapped_out_bytes,
            old_plan.stats().swapped_in_bytes + new_plan.stats().swapped_in_bytes)
      << "the new plan's executor brought back what the old one left out";
  EXPECT_EQ(new_plan.stats().swapped_out_bytes, 0u);
}

// The cost model prices a plan in its steady state, where what crosses the boundary left at the
// end of the iteration before; the executor's first iteration sends it out as it begins, so
// that its peak is the steady state's rather than that of every parameter held throughout.
TEST(PlanExecutor, StretchesAcrossTheBoundaryLeaveAsTheFirstIterationBegins) {
  const auto run = checked_persistent_swaps(stretch::across);
  // Out before the first iteration's reads, and so back for them within it (before, nothing
  // came back in the first iteration: 0 bytes).
  EXPECT_GT(run.first.swapped_in_bytes, 0u);
}

// Out from the iteration's start (released after access 0, as tensile plans with across=0):
// released when the iteration begins. Once crashed the executor's constructor.
TEST(PlanExecutor, ParametersSwappedFromTheIterationsStartKeepTheLossesBitwise) {
  const auto run = checked_persistent_swaps(stretch::from_start);
  EXPECT_GT(run.stats.swapped_out_bytes, 0u);
  EXPECT_EQ(run.held_after, run.held_before);
}

// Every planner on zoo models of every kind (convolutions with batch norm, a depthwise network,
// a recurrent one, a transformer): whatever it swaps, recomputes or moves across iterations,
// the losses stay bitwise those of vanilla training.
class EveryPlanner : public ::testing::TestWithParam<std::pair<const char*, std::int64_t>> {};

TEST_P(EveryPlanner, KeepsTheLossesOfAZooModelBitwise) {
  const auto [model, batch] = GetParam();
  std::size_t vanilla_peak = 0;
  const auto expected = vanilla_losses(zoo(model, batch), vanilla_peak);
  for (const std::string planner :
       {"vdnn-all", "vdnn-conv", "superneurons", "checkpoint", "capuchin", "tensile",
        "tensile:across=0", "home:iterations=4,particles=4", "tandem:time_limit=0.2"}) {
    SCOPED_TRACE(planner);
    const auto run = run_planned(zoo(model, batch), [&](const footprint::access_sequence& s) {
      return by_planner(planner, s, 0.5);
    });
    expect_bitwise(expected, run.losses);
    EXPECT_EQ(run.stats.diverged_iterations, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, EveryPlanner,
                         ::testing::Values(std::pair{"resnet20", 8}, std::pair{"mobilenetv2", 4},
                                           std::pair{"lstm", 8}, std::pair{"bert_mini", 8}),
                         [](const auto& named) { return std::string(named.param.first); });

TEST(PlanExecutor, RefusesAPlanOnASequenceThatDoesNotLocateItsTensors) {
  footprint::access_sequence s;
  s.model = "made up";
  for (const auto where :
       {footprint::phase::forward, footprint::phase::forward, footprint::phase::backward}) {
    footprint::operation op;
    op.name = "op" + std::to_string(s.operations.size());
    op.where = where;
    s.operations.push_back(op);
  }
  footprint::tensor x;
  x.name = "x";
  x.bytes = 1024;
  x.created_by = 0;
  x.read_by = {1, 2};
  s.tensors.push_back(x);
  footprint::plan plan;
  plan.decisions.push_back({.tensor = 0,
                            .what = footprint::action::recompute,
                            .released_after = 1,
                            .needed_at = 2,
                            .swap_out = {},
                            .swap_in = {}});
  device::cpu_backend backend;
  memory::device_pool pool(backend, pool_of(64 * MiB));
  const auto job = pool.add_job("j");
  device::copy_channel channel(backend);
  EXPECT_THROW(plan_executor(pool, job, channel, s, plan), config_error);
  s.tensors[0].allocation = 0;
  EXPECT_NO_THROW(plan_executor(pool, job, channel, s, plan));
}

}  // namespace
}  // namespace tandem::torch_support
