#include "tandem/memory/region_pool.hpp"

#include <gtest/gtest.h>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::memory {
namespace {

constexpr std::size_t region = 2 * MiB;

TEST(RegionPool, BorrowsBestFitRunsAndCoalescesOnReturn) {
  region_pool pool(8, region, 8 * region);
  auto a = pool.borrow(1, 2);
  auto b = pool.borrow(2, 3);
  auto c = pool.borrow(1, 3);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->first, 0u);
  EXPECT_EQ(b->first, 2u);
  EXPECT_EQ(c->first, 5u);
  EXPECT_EQ(pool.owner(3), 2u);
  EXPECT_EQ(pool.free_regions(), 0u);
  pool.give_back(*a);  // free: [0,2)
  pool.give_back(*c);  // free: [0,2) [5,8)
  EXPECT_EQ(pool.largest_free_run(), 3u);
  auto d = pool.borrow(3, 2);  // best fit: the run of 2 at 0, not the run of 3
  ASSERT_TRUE(d);
  EXPECT_EQ(d->first, 0u);
  pool.give_back(*d);
  pool.give_back(*b);  // all coalesce into one run
  EXPECT_EQ(pool.largest_free_run(), 8u);
  EXPECT_EQ(pool.owner(3), no_job);
  EXPECT_EQ(pool.reserved_bytes(), 0u);
  EXPECT_EQ(pool.peak_reserved_bytes(), 8 * region);
}

TEST(RegionPool, NeverLendsBeyondTheBudget) {
  region_pool pool(8, region, 3 * region);
  auto a = pool.borrow(1, 2);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.borrow(1, 2)) << "2 more regions would exceed the 3-region budget";
  EXPECT_TRUE(pool.borrow(1, 1));
  EXPECT_EQ(pool.reserved_bytes(), 3 * region);
}

TEST(RegionPool, LoweringTheBudgetTakesEffectAsRegionsReturn) {
  region_pool pool(8, region, 8 * region);
  auto a = pool.borrow(1, 4);
  ASSERT_TRUE(a);
  pool.set_budget(2 * region);  // below what is held: nothing is taken away
  EXPECT_EQ(pool.reserved_bytes(), 4 * region);
  EXPECT_FALSE(pool.borrow(1, 1));
  pool.give_back(*a);
  EXPECT_TRUE(pool.borrow(1, 2));
  EXPECT_FALSE(pool.borrow(1, 1));
}

TEST(RegionPool, RejectsABudgetAboveTheCapacity) {
  region_pool pool(4, region, 4 * region);
  EXPECT_THROW(pool.set_budget(5 * region), usage_error);
  EXPECT_THROW(region_pool(4, region, 5 * region), usage_error);
}

TEST(RegionPool, NeedsAContiguousRunForMultiRegionRequests) {
  region_pool pool(4, region, 4 * region);
  auto a = pool.borrow(1, 1);
  auto b = pool.borrow(1, 1);
  auto c = pool.borrow(1, 1);
  ASSERT_TRUE(a && b && c);
  pool.give_back(*a);
  pool.give_back(*c);  // free: [0,1) [2,4)
  EXPECT_FALSE(pool.borrow(1, 3));
  EXPECT_TRUE(pool.borrow(1, 2));
}

}  // namespace
}  // namespace tandem::memory
