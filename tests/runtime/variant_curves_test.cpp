// The region curves a real job offers for its plans (src/runtime/planned_variants.hpp): scaled
// from a measured plain iteration, or raised above one that passive swapping capped.

#include <gtest/gtest.h>

#include "planned_variants.hpp"
#include "tandem/common/units.hpp"

namespace tandem::runtime::detail {
namespace {

// 4 MiB held between iterations; 6 MiB more taken at 0.1 s and 0.2 s, all of it back at 0.9 s.
schedule::usage_curve measured() {
  schedule::usage_curve curve;
  curve.held_at_start = 4 * MiB;
  curve.steps = {{0.1, 2 * MiB}, {0.2, 4 * MiB}, {0.9, -6 * std::int64_t{MiB}}};
  curve.duration_s = 1.0;
  return curve;
}

TEST(VariantCurves, AScaledCurveKeepsWhatIsHeldBetweenIterationsAndScalesTheRest) {
  const auto half = scaled_curve(measured(), 0.5, 2.0, 2 * MiB);
  EXPECT_EQ(half.held_at_start, 4 * MiB);
  EXPECT_EQ(half.peak(), 4 * MiB + 4 * MiB) << "6 MiB above the start halved, rounded up";
  EXPECT_DOUBLE_EQ(half.duration_s, 2.0);
  EXPECT_EQ(half.held_at_end(), 4 * MiB);
  EXPECT_EQ(half.held_at(0.3), 4 * MiB + 2 * MiB) << "steps at twice their times";
  EXPECT_EQ(half.held_at(0.4), 4 * MiB + 4 * MiB);
}

TEST(VariantCurves, ARaisedCurveAddsWholeRegionsFromItsPeakToItsEnd) {
  const auto raised = raised_curve(measured(), 3 * MiB, 0.5, 2 * MiB);
  EXPECT_EQ(raised.peak(), 10 * MiB + 4 * MiB) << "3 MiB more is two regions of 2 MiB";
  EXPECT_EQ(raised.held_at(0.07), 6 * MiB) << "nothing added before the peak";
  EXPECT_EQ(raised.held_at(0.11), 14 * MiB) << "from the peak (0.2 s measured, 0.1 s here)";
  EXPECT_EQ(raised.held_at(0.46), 8 * MiB) << "the measured returns stay, the raise with them";
  EXPECT_EQ(raised.held_at_end(), 4 * MiB);
  EXPECT_DOUBLE_EQ(raised.duration_s, 0.5);

  EXPECT_EQ(raised_curve(measured(), 0, 1.0, 2 * MiB).steps, measured().steps) << "no raise";

  // Flat (the job kept its regions all through): the raise starts with the iteration.
  schedule::usage_curve flat;
  flat.held_at_start = 12 * MiB;
  flat.duration_s = 0.2;
  const auto raised_flat = raised_curve(flat, 1, 1.0, 2 * MiB);
  EXPECT_EQ(raised_flat.held_at(0.0), 14 * MiB);
  EXPECT_EQ(raised_flat.held_at_end(), 12 * MiB);
}

}  // namespace
}  // namespace tandem::runtime::detail
