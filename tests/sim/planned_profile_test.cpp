// Planned jobs in the simulator: a job planned by a footprint planner replays the cost model's
// prediction of its iteration (the predicted peak, the predicted iteration length), "none"
// changes nothing, a job's share of the device bounds the regions its plan holds, and the
// refusals of bad input.

#include "tandem/sim/planned_profile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/profile_generator.hpp"
#include "tandem/sim/region_replay.hpp"
#include "tandem/sim/sequence_generator.hpp"
#include "tandem/sim/workload_sim.hpp"

namespace tandem::sim {
namespace {

namespace fp = footprint;

/// VGG-16 on CIFAR images: 32 px, 10 classes, batch 256 (about 1 GiB at its peak).
constexpr const char* vgg_workload = R"(
[device]
capacity = "4GiB"

[policy]
name = "exclusive"

[[job]]
name = "vgg"
model = "vgg16"
batch_size = 256
iterations = 4
[job.model_options]
image_side = 32
classes = 10
)";

/// Two of them on a budget below their two peaks.
constexpr const char* two_vgg_workload = R"(
[device]
capacity = "4GiB"
budget = "1536MiB"

[policy]
name = "spatial"

[[job]]
name = "a"
model = "vgg16"
batch_size = 256
iterations = 3
[job.model_options]
image_side = 32
classes = 10

[[job]]
name = "b"
model = "vgg16"
batch_size = 256
iterations = 3
[job.model_options]
image_side = 32
classes = 10
)";

model_request vgg_request() {
  return {"vgg16", 256, {{"image_side", 32}, {"classes", 10}}, "sgd"};
}

sim_setup on_v100(std::optional<job_planning> planning) {
  sim_setup setup;
  setup.gpu = "v100";
  setup.planning = std::move(planning);
  return setup;
}

runtime::workload parse(const std::string& text, const sim_setup& setup) {
  return runtime::parse_workload(text, "test.toml", simulation_vocabulary(setup));
}

constexpr std::size_t region_size = 64 * MiB;

/// The live bytes the profile holds after every instant its steps touch, persistent included.
std::map<double, std::size_t> live_by_time(const job_profile& profile) {
  std::map<double, std::size_t> live;
  std::int64_t held = static_cast<std::int64_t>(profile.persistent_bytes());
  for (const auto& step : profile.steps) {
    held += step.bytes;
    live[step.at_s] = static_cast<std::size_t>(held);
  }
  return live;
}

// The planners that move something at 60% of the peak: the cost model's prediction is what the
// simulation replays, its peak and its iteration length.
class PlannedJob : public testing::TestWithParam<std::string> {};

TEST_P(PlannedJob, ReplaysThePredictionsPeakAndIterationLength) {
  const auto& planner = GetParam();
  const auto setup = on_v100(job_planning{.planner = planner, .budget = plan_budget{60, 0}});
  const auto spec = parse(vgg_workload, setup);

  // The prediction, made here as the simulator is documented to make it.
  const auto& gpu = find_gpu("v100");
  const auto sequence = generate_access_sequence(vgg_request(), gpu);
  const fp::cost_options costs{.copy_bandwidth = gpu.pcie_bandwidth};
  const auto vanilla = fp::predict(sequence, fp::plan{}, costs);
  const auto p = fp::make_planner(planner)->make_plan(
      sequence, {.budget_bytes = plan_budget{60, 0}.bytes_for(vanilla.peak_bytes), .costs = costs});
  ASSERT_FALSE(p.decisions.empty()) << planner << " planned nothing";
  const auto predicted = fp::predict(sequence, p, costs);
  ASSERT_LT(predicted.peak_bytes, vanilla.peak_bytes);

  std::vector<planned_job_summary> plans;
  const auto result = simulate_workload(spec, setup, &plans);
  ASSERT_EQ(result.failed_jobs(), 0u);
  const auto& job = result.jobs.at(0);
  EXPECT_EQ(job.peak_live_bytes, predicted.peak_bytes);
  // The regions held cover the live bytes, a few regions more at most.
  EXPECT_GE(job.peak_reserved_bytes, predicted.peak_bytes);
  EXPECT_LE(job.peak_reserved_bytes, predicted.peak_bytes + 4 * region_size);
  ASSERT_EQ(job.iteration_log.size(), 4u);
  for (const auto& iteration : job.iteration_log)
    EXPECT_NEAR(iteration.end_s - iteration.start_s, predicted.iteration_s,
                1e-9 * predicted.iteration_s);

  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].job, "vgg");
  EXPECT_EQ(plans[0].decisions, p.decisions.size());
  EXPECT_EQ(plans[0].planned_peak_bytes, predicted.peak_bytes);
  EXPECT_EQ(plans[0].vanilla_peak_bytes, vanilla.peak_bytes);
  EXPECT_NEAR(plans[0].planned_s, predicted.iteration_s, 1e-9 * predicted.iteration_s);
}

INSTANTIATE_TEST_SUITE_P(Planners, PlannedJob,
                         testing::Values("vdnn-all", "vdnn-conv", "superneurons", "checkpoint",
                                         "capuchin"));

TEST(PlannedJobs, PlannerNoneChangesNothing) {
  const auto plain = on_v100(std::nullopt);
  const auto none = on_v100(job_planning{.planner = "none", .budget = std::nullopt});
  const auto spec = parse(vgg_workload, plain);
  const auto without = simulate_workload(spec, plain);
  const auto with = simulate_workload(spec, none);
  EXPECT_EQ(with.makespan_s, without.makespan_s);
  EXPECT_EQ(with.aggregate_samples_per_s, without.aggregate_samples_per_s);
  EXPECT_EQ(with.peak_reserved_bytes, without.peak_reserved_bytes);
  ASSERT_EQ(with.jobs.size(), without.jobs.size());
  EXPECT_EQ(with.jobs[0].peak_live_bytes, without.jobs[0].peak_live_bytes);
  EXPECT_EQ(with.jobs[0].persistent_bytes, without.jobs[0].persistent_bytes);
  ASSERT_EQ(with.jobs[0].iteration_log.size(), without.jobs[0].iteration_log.size());
  for (std::size_t i = 0; i < with.jobs[0].iteration_log.size(); ++i) {
    EXPECT_EQ(with.jobs[0].iteration_log[i].start_s, without.jobs[0].iteration_log[i].start_s);
    EXPECT_EQ(with.jobs[0].iteration_log[i].end_s, without.jobs[0].iteration_log[i].end_s);
  }
  const auto planned_held = simulated_jobs(spec, none)[0].profile->held;
  const auto plain_held = simulated_jobs(spec, plain)[0].profile->held;
  EXPECT_EQ(planned_held.held_at_start, plain_held.held_at_start);
  EXPECT_EQ(planned_held.steps, plain_held.steps);
}

// The conversion itself, on the empty plan (which plan_iteration never converts: it keeps the
// generated profile): the iteration is the generated one, the peak too but for its rounding.
TEST(PlannedJobs, AnEmptyPlansPredictionGivesTheGeneratedIteration) {
  const auto& gpu = find_gpu("v100");
  auto vanilla = generate_profile(vgg_request(), gpu);
  replay_regions(vanilla, region_size);
  const auto sequence = generate_access_sequence(vgg_request(), gpu);
  const auto predicted = fp::predict(sequence, fp::plan{});
  const auto made = profile_from_prediction(vanilla, sequence, predicted, "none", region_size);
  EXPECT_NEAR(made.solo_iteration_s(), vanilla.solo_iteration_s(),
              1e-12 * vanilla.solo_iteration_s());
  EXPECT_EQ(made.peak_live_bytes, predicted.peak_bytes);
  EXPECT_LE(made.peak_live_bytes, vanilla.peak_live_bytes);
  EXPECT_GT(static_cast<double>(made.peak_live_bytes),
            (1 - 1e-4) * static_cast<double>(vanilla.peak_live_bytes));
  ASSERT_EQ(made.operations.size(), vanilla.operations.size());
  for (std::size_t i = 0; i < made.operations.size(); ++i)
    EXPECT_EQ(made.operations[i].fill, vanilla.operations[i].fill) << "nothing stalls";
}

// Under a plan, the profile's live bytes are the predicted curve's at every point of it, on a
// clock stretched to the predicted iteration.
TEST(PlannedJobs, TheProfilesLiveBytesFollowThePredictedCurve) {
  const auto& gpu = find_gpu("v100");
  auto vanilla = generate_profile(vgg_request(), gpu);
  replay_regions(vanilla, region_size);
  const auto sequence = generate_access_sequence(vgg_request(), gpu);
  const auto planned = plan_iteration(vanilla, sequence, "vdnn-all", 0, 12e9, region_size);
  ASSERT_FALSE(planned.plan.decisions.empty());
  const auto& curve = planned.predicted.curve;
  const auto live = live_by_time(planned.profile);
  // The prediction's clock is the sequence's; the profile's is the generated profile's.
  const double clock = vanilla.solo_iteration_s() / sequence.iteration_s();
  const double end = planned.profile.solo_iteration_s();
  std::size_t least = curve.front().bytes;
  for (const auto& point : curve) least = std::min(least, point.bytes);
  EXPECT_EQ(planned.profile.persistent_bytes(), least);
  for (const auto& point : curve) {
    // After every step up to the point (a point may change nothing: no step of its own).
    const double at = std::min(point.at_s * clock, end);
    const auto after = live.upper_bound(at);
    const auto held = after == live.begin() ? least : std::prev(after)->second;
    EXPECT_EQ(held, point.bytes) << "at " << at;
  }
  EXPECT_GT(planned.predicted.stall_s, 0) << "vdnn-all stalls on VGG-16's feature maps";
  // The stalls leave the device idle: every fill is lowered by the busy share.
  const double busy = sequence.iteration_s() / planned.predicted.iteration_s;
  EXPECT_NEAR(planned.profile.operations[3].fill, vanilla.operations[3].fill * busy, 1e-12);
}

// Without --plan-budget a job plans for its share of the device: the budget over the jobs, in
// regions held. Two VGG-16 whose peaks together exceed the budget then run side by side under
// spatial sharing, which fails one of them unplanned.
TEST(PlannedJobs, EachJobsShareOfTheDeviceBoundsTheRegionsItsPlanHolds) {
  const auto plain = on_v100(std::nullopt);
  const auto spec = parse(two_vgg_workload, plain);
  ASSERT_EQ(simulate_workload(spec, plain).failed_jobs(), 1u);

  const auto planned = on_v100(job_planning{.planner = "checkpoint", .budget = std::nullopt});
  std::vector<planned_job_summary> plans;
  const auto result = simulate_workload(spec, planned, &plans);
  EXPECT_EQ(result.failed_jobs(), 0u);
  ASSERT_EQ(plans.size(), 2u);
  for (const auto& plan : plans) {
    EXPECT_LE(plan.planned_held_bytes, 768 * MiB);
    EXPECT_GT(plan.vanilla_held_bytes, 768 * MiB);
    EXPECT_NE(plan.budget.find("its share of the budget (1.50 GiB / 2 jobs)"), std::string::npos)
        << plan.budget;
  }
  EXPECT_LE(result.peak_reserved_bytes, 1536 * MiB);
}

TEST(PlannedJobs, PlanBudgetsAreAShareOfThePeakOrASize) {
  EXPECT_EQ(parse_plan_budget("75%"), (plan_budget{75, 0}));
  EXPECT_EQ(parse_plan_budget("62.5%"), (plan_budget{62.5, 0}));
  EXPECT_EQ(parse_plan_budget("100%"), (plan_budget{100, 0}));
  EXPECT_EQ(parse_plan_budget("6GiB"), (plan_budget{0, 6 * GiB}));
  EXPECT_EQ(parse_plan_budget("4096"), (plan_budget{0, 4096}));
  const plan_budget share{75, 0};
  const plan_budget size{0, 6 * GiB};
  EXPECT_EQ(share.bytes_for(1000), 750u);
  EXPECT_EQ(size.bytes_for(1000), 6 * GiB);
  EXPECT_EQ(share.describe(), "75% of the vanilla peak");
  EXPECT_EQ(size.describe(), "6.00 GiB");
  for (const auto* bad : {"0%", "101%", "-5%", "%", "abc", "0", "", "75 %", "nan%"}) {
    try {
      static_cast<void>(parse_plan_budget(bad));
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const config_error& e) {
      EXPECT_NE(std::string(e.what()).find("a share of the job's vanilla peak (\"75%\""),
                std::string::npos)
          << e.what();
    }
  }
}

std::string refusal(const runtime::workload& spec, const sim_setup& setup) {
  try {
    validate_simulation(spec, setup);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

TEST(PlannedJobs, AnUnknownPlannerAndRecordedProfilesAreRefused) {
  const auto setup = on_v100(job_planning{.planner = "capuchn", .budget = std::nullopt});
  const auto spec = parse(vgg_workload, setup);
  const auto unknown = refusal(spec, setup);
  EXPECT_NE(unknown.find("unknown planner 'capuchn'; did you mean 'capuchin'?"), std::string::npos)
      << unknown;
  for (const auto& name : fp::planner_names())
    EXPECT_NE(unknown.find(name), std::string::npos) << unknown;

  runtime::profile_set recorded;
  sim_setup replay;
  replay.recorded = &recorded;
  replay.planning = job_planning{.planner = "capuchin", .budget = std::nullopt};
  const auto message = refusal(parse(vgg_workload, replay), replay);
  EXPECT_NE(message.find("planned jobs (--planner capuchin) need --gpu NAME"), std::string::npos)
      << message;
  EXPECT_NE(message.find("carry none yet"), std::string::npos) << message;
}

}  // namespace
}  // namespace tandem::sim
