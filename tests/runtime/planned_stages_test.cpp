// The parts a planned job's first iterations play (src/runtime/planned_training.hpp): a job
// planned by its own `planner` settles one plain iteration after the recording before the
// reference it is calibrated to; a job offered plans by its policy calibrates to nothing and
// does not wait for one.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "footprint_iteration.hpp"
#include "planned_training.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/copy_channel.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/memory_monitor.hpp"
#include "tandem/torch/passive_swapper.hpp"

namespace tandem::runtime::detail {
namespace {

TEST(PlannedStages, APlannedJobSettlesBeforeItsReferenceAndRunsItsPlanFromIteration4) {
  const std::vector<planned_stage> expected = {planned_stage::warm_up,  planned_stage::recorded,
                                               planned_stage::settling, planned_stage::reference,
                                               planned_stage::planned,  planned_stage::planned};
  for (std::int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(stage_of(i), expected[static_cast<std::size_t>(i)]) << "iteration " << i;
  EXPECT_EQ(stage_of(reference_iteration), planned_stage::reference);
  EXPECT_EQ(planned_job_min_iterations, reference_iteration + 2) << "one planned iteration";
}

TEST(PlannedStages, AJobOfferedPlansByItsPolicyRunsThemFromIteration2WithoutSettling) {
  const std::vector<planned_stage> expected = {planned_stage::warm_up, planned_stage::recorded,
                                               planned_stage::reference, planned_stage::planned,
                                               planned_stage::planned};
  for (std::int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(offered_stage_of(i), expected[static_cast<std::size_t>(i)]) << "iteration " << i;
  }
}

// The settling and reference iterations are the plain iteration, measured: while memory has
// never proved short they run without the passive swapper (its callbacks slowed them by about
// 3%), as a plain job's iterations do. Where memory proved short they swap passively, or
// Session.APlannedJobWhoseVanillaPeakIsAboveTheBudgetIsRecordedInPassiveModeAndFinishes fails.
TEST(PlannedStages, ThePlainIterationsAreMeasuredWithoutPassiveSwappingWhileMemorySuffices) {
  device::cpu_backend backend;
  memory::pool_options options;
  options.capacity = 64 * MiB;
  options.region_size = 2 * MiB;
  memory_monitor monitor;  // outlives the pool, which sends it the events
  memory::device_pool pool(backend, options);
  pool.set_trace_sink(&monitor);
  const auto job = pool.add_job("planned");
  device::copy_channel channel(backend);
  planned_training planned("none", std::nullopt, 0, pool, monitor, channel, job);
  torch_support::passive_swapper passive(pool, job, channel);
  const footprint_parts parts{&planned, nullptr, &passive};
  for (const auto stage : {planned_stage::warm_up, planned_stage::recorded}) {
    EXPECT_TRUE(footprint_iteration(parts, stage, 0, nullptr).swaps_passively());
  }
  for (const auto stage : {planned_stage::settling, planned_stage::reference}) {
    EXPECT_FALSE(footprint_iteration(parts, stage, 0, nullptr).swaps_passively());
  }
  // A job swapping passively for its whole life (job_options::swap_passively) still does.
  EXPECT_TRUE(
      footprint_iteration({nullptr, nullptr, &passive}, planned_stage::reference, 0, nullptr)
          .swaps_passively());
}

/// Three operations as a recording saw them: 1 s, 0.5 s and 2 s long, with 0.5 s idle before
/// each of the last two (its callbacks' work); 4.5 s in all.
footprint::access_sequence recorded_three() {
  footprint::access_sequence s;
  s.model = "recorded";
  s.operations = {
      {"conv", footprint::phase::forward, footprint::op_kind::convolution, 0, 1, false},
      {"relu", footprint::phase::forward, footprint::op_kind::elementwise, 1.5, 0.5, false},
      {"back", footprint::phase::backward, footprint::op_kind::convolution, 2.5, 2, false}};
  return s;
}

// The recording's callbacks slow small operations far more than large ones, so a plain
// iteration's timing of each operation gives the shares of the iteration, scaled to the
// reference's length; without it, one factor scales every recorded time.
TEST(PlannedStages, CalibrationTakesThePlainShareOfEachOperationAndTheReferencesLength) {
  const auto recorded = recorded_three();
  ASSERT_DOUBLE_EQ(recorded.iteration_s(), 4.5);
  const std::vector<double> timed{1.5, 0.1, 2.4};  // 4 s busy, 5 s with the idle time

  const auto timed_up = calibrated_sequence(recorded, timed, 3.0);
  ASSERT_TRUE(timed_up.has_value());
  EXPECT_EQ(timed_up->how, "timed");
  const auto& ops = timed_up->sequence.operations;
  for (std::size_t op = 0; op < 3; ++op)
    EXPECT_DOUBLE_EQ(ops[op].duration_s, timed[op] * 3.0 / 5.0) << "operation " << op;
  EXPECT_DOUBLE_EQ(ops[1].start_s, (1.5 + 0.5) * 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(timed_up->sequence.iteration_s(), 3.0);

  // No timing, one of another iteration, or one more than twice the reference's length:
  // every recorded time scaled by 3 / 4.5.
  for (const auto& other :
       {std::vector<double>{}, std::vector<double>{0.9, 0.1}, std::vector<double>{4.0, 1.0, 2.0}}) {
    const auto scaled = calibrated_sequence(recorded, other, 3.0);
    ASSERT_TRUE(scaled.has_value());
    EXPECT_EQ(scaled->how, "scaled");
    EXPECT_DOUBLE_EQ(scaled->sequence.operations[2].duration_s, 2.0 * 3.0 / 4.5);
    EXPECT_DOUBLE_EQ(scaled->sequence.iteration_s(), 3.0);
  }
  // A reference no faster than the recording, or more than twice as fast: left as recorded.
  EXPECT_FALSE(calibrated_sequence(recorded, timed, 4.5).has_value());
  EXPECT_FALSE(calibrated_sequence(recorded, timed, 2.0).has_value());
  EXPECT_FALSE(calibrated_sequence(recorded, timed, 0).has_value());
}

}  // namespace
}  // namespace tandem::runtime::detail
