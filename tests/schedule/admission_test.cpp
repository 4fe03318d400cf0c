// The admission rule shared by scrooge, nodegroup and Salus (admission.hpp).

#include "tandem/schedule/admission.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <limits>

namespace tandem::schedule {
namespace {

constexpr std::size_t most = std::numeric_limits<std::size_t>::max();

TEST(Admission, FitsBesideIsHeldPlusNeedAgainstTheBudgetWithoutOverflow) {
  EXPECT_TRUE(fits_beside(60, 40, 100));
  EXPECT_FALSE(fits_beside(60, 41, 100));
  EXPECT_TRUE(fits_beside(0, 100, 100));
  EXPECT_FALSE(fits_beside(101, 0, 100)) << "already above the budget";
  EXPECT_FALSE(fits_beside(most, most, 100)) << "a sum that would wrap around";
  EXPECT_FALSE(fits_beside(50, most - 10, most - 20));
}

TEST(Admission, ANewcomerFitsWhileTheHoldingsLeaveRoomForTheLargestPeak) {
  newcomer_admission admission;
  admission.count(30, 50);  // holds 30 between iterations, 50 at its peak
  admission.count(20, 45);
  EXPECT_EQ(admission.held(), 50u);
  EXPECT_EQ(admission.largest_peak(), 50u);
  EXPECT_TRUE(admission.admits(100));
  EXPECT_FALSE(admission.admits(99));
}

TEST(Admission, ItsOwnPeakCountsWhereKnown) {
  newcomer_admission admission;
  admission.count(30, 50);
  admission.count_own(70);
  EXPECT_EQ(admission.largest_peak(), 70u);
  EXPECT_TRUE(admission.admits(100));
  EXPECT_FALSE(admission.admits(99));
}

TEST(Admission, WithNobodyHoldingMemoryOrNoPeakKnownItIsAlwaysAdmitted) {
  EXPECT_TRUE(newcomer_admission().admits(0)) << "nobody there";
  newcomer_admission idle;
  idle.count(0, 500);  // a job that holds nothing now, with a large peak
  EXPECT_TRUE(idle.admits(100)) << "nothing held: waiting cannot make room";
  newcomer_admission unmeasured;
  unmeasured.count(500, 0);  // holds memory, no iteration measured yet
  EXPECT_TRUE(unmeasured.admits(100)) << "no peak known to make room for";
}

}  // namespace
}  // namespace tandem::schedule
