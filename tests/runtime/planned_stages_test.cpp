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

}  // namespace
}  // namespace tandem::runtime::detail
