// Salus's lane assignment against examples worked out by hand (MiB), and its invariants under
// random admissions, departures and defragmentations.

#include "tandem/schedule/lanes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace {

using tandem::MiB;
using tandem::memory::job_id;
using namespace tandem::schedule;

/// (id, size in MiB, offset in MiB, jobs) of every lane: compared whole in the examples.
struct lane_view {
  std::size_t id;
  std::size_t size_mib;
  std::size_t offset_mib;
  std::vector<job_id> jobs;
  friend bool operator==(const lane_view&, const lane_view&) = default;
};

std::vector<lane_view> view(const lane_assignment& lanes) {
  std::vector<lane_view> out;
  for (const auto& l : lanes.lanes()) out.push_back({l.id, l.size / MiB, l.offset / MiB, l.jobs});
  return out;
}

using lanes_t = std::vector<lane_view>;

TEST(Lanes, FirstJobOpensALane) {
  lane_assignment lanes(100 * MiB);
  EXPECT_EQ(lanes.admit(1, 10 * MiB, 20 * MiB), 0U);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 20, 0, {1}}}));
  EXPECT_EQ(lanes.lane_of(1), 0U);
  ASSERT_NE(lanes.lane_holding(1), nullptr);
  EXPECT_EQ(lanes.lane_holding(1)->id, 0U);
  EXPECT_EQ(lanes.lane_holding(2), nullptr);
  EXPECT_EQ(lanes.persistent_total(), 10 * MiB);
  EXPECT_EQ(lanes.lanes_total(), 20 * MiB);
  EXPECT_TRUE(lanes.safe());
}

TEST(Lanes, ASecondJobThatFitsANewLaneGetsItsOwn) {
  lane_assignment lanes(100 * MiB);
  ASSERT_EQ(lanes.admit(1, 10 * MiB, 20 * MiB), 0U);
  // 10 + 10 persistent + 20 + 30 in lanes = 70 <= 100.
  EXPECT_EQ(lanes.admit(2, 10 * MiB, 30 * MiB), 1U);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 20, 0, {1}}, {1, 30, 20, {2}}}));
  EXPECT_TRUE(lanes.safe());
}

TEST(Lanes, AJobThatOnlyFitsAnExistingLaneJoinsTheSmallestLargeEnough) {
  lane_assignment lanes(90 * MiB);
  ASSERT_EQ(lanes.admit(1, 10 * MiB, 30 * MiB), 0U);
  ASSERT_EQ(lanes.admit(2, 10 * MiB, 20 * MiB), 1U);
  // A new lane: 25 + 50 + 18 = 93 > 90. Both lanes are large enough; 20 fits best. 25 + 50 = 75.
  EXPECT_EQ(lanes.admit(3, 5 * MiB, 18 * MiB), 1U);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 30, 0, {1}}, {1, 20, 30, {2, 3}}}));
  EXPECT_EQ(lanes.persistent_total(), 25 * MiB);
  EXPECT_TRUE(lanes.safe());
}

TEST(Lanes, OneLaneAtMostPutsEveryJobInItGrowingItWhenNeeded) {
  lane_assignment lanes(100 * MiB, 1);
  ASSERT_EQ(lanes.admit(1, 10 * MiB, 20 * MiB), 0U);
  // A second lane would fit (10 + 10 + 20 + 10 = 50) but one is the most: it joins lane 0.
  EXPECT_EQ(lanes.admit(2, 10 * MiB, 10 * MiB), 0U);
  // Larger than the lane: the lane grows to 40 (30 persistent + 40 <= 100).
  EXPECT_EQ(lanes.admit(3, 10 * MiB, 40 * MiB), 0U);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 40, 0, {1, 2, 3}}}));
  // 40 persistent + 61 > 100: refused, nothing changes.
  EXPECT_EQ(lanes.admit(4, 10 * MiB, 61 * MiB), std::nullopt);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 40, 0, {1, 2, 3}}}));
  EXPECT_TRUE(lanes.safe());
}

TEST(Lanes, ReorganizingGrowsTheLargestLaneWhenNoLaneIsLargeEnough) {
  lane_assignment lanes(100 * MiB);
  ASSERT_EQ(lanes.admit(1, 10 * MiB, 30 * MiB), 0U);
  ASSERT_EQ(lanes.admit(2, 10 * MiB, 20 * MiB), 1U);
  // A new lane: 30 + 50 + 35 = 115 > 100; no lane has 35. Growing lane 0 (30 -> 35) gives
  // 30 + 55 = 85; growing lane 1 would give 95. Lane 1 moves up behind the grown lane 0.
  EXPECT_EQ(lanes.admit(3, 10 * MiB, 35 * MiB), 0U);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 35, 0, {1, 3}}, {1, 20, 35, {2}}}));
  EXPECT_EQ(lanes.persistent_total() + lanes.lanes_total(), 85 * MiB);
  EXPECT_TRUE(lanes.safe());
}

TEST(Lanes, ReorganizingMergesTheLargestLanesWhenGrowingOneIsNotEnough) {
  lane_assignment lanes(100 * MiB);
  ASSERT_EQ(lanes.admit(1, 5 * MiB, 30 * MiB), 0U);
  ASSERT_EQ(lanes.admit(2, 5 * MiB, 25 * MiB), 1U);
  ASSERT_EQ(lanes.admit(3, 5 * MiB, 20 * MiB), 2U);
  // 20 persistent + 75 in lanes. A new lane of 40: 135; growing lane 0: 20 + 85 = 105; merging
  // lanes 0 and 1 into one of 40: 20 + 40 + 20 = 80.
  EXPECT_EQ(lanes.admit(4, 5 * MiB, 40 * MiB), 0U);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 40, 0, {1, 2, 4}}, {2, 20, 40, {3}}}));
  EXPECT_EQ(lanes.lane_of(2), 0U);
  EXPECT_EQ(lanes.persistent_total() + lanes.lanes_total(), 80 * MiB);
  EXPECT_TRUE(lanes.safe());
}

TEST(Lanes, AJobThatFitsNowhereNowIsNotAdmittedAndChangesNothing) {
  lane_assignment lanes(100 * MiB);
  ASSERT_EQ(lanes.admit(1, 10 * MiB, 50 * MiB), 0U);
  // Even the best reorganization (lane 0 grows to 60) needs 10 + 31 + 60 = 101.
  EXPECT_EQ(lanes.admit(2, 31 * MiB, 60 * MiB), std::nullopt);
  EXPECT_EQ(lanes.lane_of(2), std::nullopt);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 50, 0, {1}}}));
  EXPECT_EQ(lanes.persistent_total(), 10 * MiB);
  // One MiB less persistent memory and it fits exactly, in the grown lane.
  EXPECT_EQ(lanes.admit(2, 30 * MiB, 60 * MiB), 0U);
  EXPECT_EQ(lanes.persistent_total() + lanes.lanes_total(), 100 * MiB);
  // Its persistent memory alone would break the condition: no lane helps.
  EXPECT_EQ(lanes.admit(3, 1, 0), std::nullopt);
}

TEST(Lanes, AJobThatCanNeverFitIsRefusedWithItsSizes) {
  lane_assignment lanes(100 * MiB);
  try {
    (void)lanes.admit(7, 60 * MiB, 50 * MiB);
    FAIL() << "admitted a job larger than the capacity";
  } catch (const tandem::config_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("job 7"), std::string::npos) << message;
    EXPECT_NE(message.find("60.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("50.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("100.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("raise the budget"), std::string::npos) << message;
  }
  EXPECT_EQ(lanes.lane_of(7), std::nullopt);
  EXPECT_TRUE(lanes.lanes().empty());
  EXPECT_EQ(lanes.admit(7, 50 * MiB, 50 * MiB), 0U);  // exactly the capacity runs
}

TEST(Lanes, MisuseIsAUsageError) {
  lane_assignment lanes(100 * MiB);
  ASSERT_EQ(lanes.admit(1, MiB, MiB), 0U);
  EXPECT_THROW((void)lanes.admit(1, MiB, MiB), tandem::usage_error);
  EXPECT_THROW(lanes.release(2), tandem::usage_error);
}

TEST(Lanes, ReleasedSpaceReturnsAtDefragmentationEmptyLanesGoAndLanesShrinkToTheirJobs) {
  lane_assignment lanes(70 * MiB);
  ASSERT_EQ(lanes.admit(1, 5 * MiB, 30 * MiB), 0U);
  ASSERT_EQ(lanes.admit(2, 5 * MiB, 20 * MiB), 1U);
  ASSERT_EQ(lanes.admit(3, 5 * MiB, 10 * MiB), 1U);  // a new lane would need 75 > 70
  lanes.release(2);
  lanes.release(1);
  // Persistent memory is back at once; lanes keep their place until the iteration boundary.
  EXPECT_EQ(lanes.persistent_total(), 5 * MiB);
  EXPECT_EQ(view(lanes), (lanes_t{{0, 30, 0, {}}, {1, 20, 30, {3}}}));
  EXPECT_EQ(lanes.reclaimable(), 40 * MiB);
  EXPECT_EQ(lanes.lane_of(1), std::nullopt);
  lanes.defragment();
  EXPECT_EQ(view(lanes), (lanes_t{{1, 10, 0, {3}}}));
  EXPECT_EQ(lanes.lanes_total(), 10 * MiB);
  EXPECT_EQ(lanes.reclaimable(), 0U);
  EXPECT_TRUE(lanes.safe());
}

TEST(Lanes, AnEmptyLaneAwaitingDefragmentationCanBeJoined) {
  lane_assignment lanes(60 * MiB);
  ASSERT_EQ(lanes.admit(1, 10 * MiB, 40 * MiB), 0U);
  lanes.release(1);
  // A new lane: 10 + 40 + 30 = 80 > 60; the empty lane 0 (40) fits: 10 + 40 = 50.
  EXPECT_EQ(lanes.admit(2, 10 * MiB, 30 * MiB), 0U);
  lanes.defragment();
  EXPECT_EQ(view(lanes), (lanes_t{{0, 30, 0, {2}}}));
}

TEST(Lanes, DefragmentationLaysLanesOutWithoutHoles) {
  lane_assignment lanes(200 * MiB);
  ASSERT_EQ(lanes.admit(1, 0, 30 * MiB), 0U);
  ASSERT_EQ(lanes.admit(2, 0, 20 * MiB), 1U);
  ASSERT_EQ(lanes.admit(3, 0, 10 * MiB), 2U);
  ASSERT_EQ(lanes.admit(4, 0, 40 * MiB), 3U);
  EXPECT_EQ(view(lanes),
            (lanes_t{{0, 30, 0, {1}}, {1, 20, 30, {2}}, {2, 10, 50, {3}}, {3, 40, 60, {4}}}));
  lanes.release(2);
  lanes.release(3);
  lanes.defragment();
  // Lane 3 moves down from 60 to 30, right behind lane 0.
  EXPECT_EQ(view(lanes), (lanes_t{{0, 30, 0, {1}}, {3, 40, 30, {4}}}));
  // New lanes open at the end, with fresh ids.
  EXPECT_EQ(lanes.admit(5, 0, 5 * MiB), 4U);
  EXPECT_EQ(lanes.lanes().back().offset, 70 * MiB);
}

TEST(Lanes, ABudgetCutEvictsNobodyButHoldsBackAdmissions) {
  lane_assignment lanes(100 * MiB);
  ASSERT_EQ(lanes.admit(1, 20 * MiB, 40 * MiB), 0U);
  lanes.set_capacity(50 * MiB);
  EXPECT_EQ(lanes.capacity(), 50 * MiB);
  EXPECT_EQ(lanes.lane_of(1), 0U);
  EXPECT_FALSE(lanes.safe());
  EXPECT_EQ(lanes.admit(2, 0, 0), std::nullopt);
  lanes.set_capacity(100 * MiB);
  EXPECT_TRUE(lanes.safe());
  EXPECT_EQ(lanes.admit(2, 10 * MiB, 30 * MiB), 1U);
}

TEST(Lanes, RandomSequencesKeepEveryInvariant) {
  struct sizes {
    std::size_t persistent;
    std::size_t ephemeral;
  };
  std::size_t admitted_count = 0;
  std::size_t reorganized_count = 0;
  for (std::uint32_t seed = 1; seed <= 500; ++seed) {
    std::mt19937 rng(seed);
    const auto pick = [&](std::size_t lo, std::size_t hi) {
      return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    const std::size_t capacity = pick(16, 1024);
    lane_assignment lanes(capacity);
    std::map<job_id, sizes> admitted;
    job_id next_job = 0;

    const auto check = [&](const std::string& after) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " after " + after);
      ASSERT_TRUE(lanes.safe());
      std::size_t persistent = 0;
      for (const auto& [job, s] : admitted) persistent += s.persistent;
      EXPECT_EQ(lanes.persistent_total(), persistent);
      std::map<job_id, std::size_t> seen;  // job -> its lane
      std::size_t end = 0;
      for (const auto& l : lanes.lanes()) {
        EXPECT_EQ(l.offset, end) << "lanes must be contiguous and ordered";
        end = l.offset + l.size;
        for (const auto job : l.jobs) {
          ASSERT_TRUE(admitted.contains(job)) << "lane " << l.id << " holds a job that left";
          EXPECT_TRUE(seen.emplace(job, l.id).second) << "job " << job << " is in two lanes";
          EXPECT_GE(l.size, admitted.at(job).ephemeral);
        }
      }
      EXPECT_EQ(end, lanes.lanes_total());
      EXPECT_EQ(seen.size(), admitted.size());
      for (const auto& [job, s] : admitted) EXPECT_EQ(lanes.lane_of(job), seen[job]);
    };

    const std::size_t steps = pick(5, 60);
    for (std::size_t step = 0; step < steps; ++step) {
      const auto action = pick(0, 9);
      if (action < 6 || admitted.empty()) {
        const job_id job = next_job++;
        const std::size_t persistent = pick(0, capacity / 3);
        const std::size_t ephemeral = pick(0, capacity / 2);
        if (persistent + ephemeral > capacity) {
          EXPECT_THROW((void)lanes.admit(job, persistent, ephemeral), tandem::config_error);
          check("a refusal");
          continue;
        }
        const auto before = view(lanes);
        const auto lane_count = lanes.lanes().size();
        // Step 1 of the assignment: when a lane of its own fits, the job must be admitted.
        const bool own_lane_fits =
            lanes.persistent_total() + persistent + lanes.lanes_total() + ephemeral <= capacity;
        const auto lane = lanes.admit(job, persistent, ephemeral);
        if (lane) {
          admitted.emplace(job, sizes{persistent, ephemeral});
          ++admitted_count;
          if (lanes.lanes().size() < lane_count) ++reorganized_count;
          if (own_lane_fits) {
            EXPECT_EQ(lanes.lanes().size(), lane_count + 1);
          }
        } else {
          EXPECT_FALSE(own_lane_fits);
          EXPECT_EQ(view(lanes), before) << "a refused admission changed the lanes";
        }
        check("admitting job " + std::to_string(job));
      } else if (action < 9) {
        auto it = admitted.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(pick(0, admitted.size() - 1)));
        const job_id job = it->first;
        admitted.erase(it);
        lanes.release(job);
        check("releasing job " + std::to_string(job));
      } else {
        lanes.defragment();
        check("defragmenting");
        EXPECT_EQ(lanes.reclaimable(), 0U);
        for (const auto& l : lanes.lanes()) {
          ASSERT_FALSE(l.jobs.empty());
          std::size_t need = 0;
          for (const auto job : l.jobs) need = std::max(need, admitted.at(job).ephemeral);
          EXPECT_EQ(l.size, need);
        }
      }
    }
  }
  // The sequences exercise the interesting paths, not only the easy one.
  EXPECT_GT(admitted_count, 2000U);
  EXPECT_GT(reorganized_count, 10U);
}

}  // namespace
