// The parts a planned job's first iterations play (src/runtime/planned_training.hpp): a job
// planned by its own `planner` settles one plain iteration after the recording before the
// reference it is calibrated to; a job offered plans by its policy calibrates to nothing and
// does not wait for one.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "planned_training.hpp"

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

}  // namespace
}  // namespace tandem::runtime::detail
