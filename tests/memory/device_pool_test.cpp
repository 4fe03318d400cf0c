// Unit tests of the pool's allocation contract on the CPU backend.

#include "tandem/memory/device_pool.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "pool_fixture.hpp"
#include "tandem/common/error.hpp"
#include "tandem/memory/borrow_gate.hpp"
#include "tandem/memory/no_wait_scope.hpp"

namespace tandem::memory {
namespace {

using testing::small_pool;

class DevicePool : public ::testing::Test {
 protected:
  device::cpu_backend backend_;
  std::unique_ptr<device::stream> stream_ =
      backend_.create_stream("s", device::stream_kind::compute);
};

TEST_F(DevicePool, RoundsRequestsAndKeepsPointersInsideThePool) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("a");
  void* p = pool.allocate(job, *stream_, 1);
  void* q = pool.allocate(job, *stream_, 513);
  EXPECT_TRUE(pool.owns(p));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 512, 0u);
  EXPECT_EQ(pool.stats(job).live_bytes, 512u + 1024u);
  EXPECT_EQ(pool.stats().live_bytes, 1536u);
  EXPECT_EQ(pool.deallocate(job, p), free_status::ok);
  EXPECT_EQ(pool.deallocate(job, q), free_status::ok);
  EXPECT_EQ(pool.stats(job).live_bytes, 0u);
}

TEST_F(DevicePool, ZeroBytesGiveNullAndNullFreesAreIgnored) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("a");
  EXPECT_EQ(pool.allocate(job, *stream_, 0), nullptr);
  EXPECT_EQ(pool.deallocate(job, nullptr), free_status::null_pointer);
  EXPECT_EQ(pool.stats().invalid_frees, 0u);
}

TEST_F(DevicePool, KindsAndSizesLiveInSeparateRegions) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("a");
  void* weights = pool.allocate(job, *stream_, 512 * KiB, alloc_kind::persistent);
  void* feature = pool.allocate(job, *stream_, 512 * KiB, alloc_kind::feature_map);
  void* scratch = pool.allocate(job, *stream_, 4 * KiB, alloc_kind::temporary);
  void* small_fm = pool.allocate(job, *stream_, 8 * KiB, alloc_kind::feature_map);
  void* big_scratch = pool.allocate(job, *stream_, 512 * KiB, alloc_kind::temporary);
  void* gradient = pool.allocate(job, *stream_, 512 * KiB, alloc_kind::gradient);
  std::set<std::size_t> regions;
  for (void* p : {weights, feature, scratch, big_scratch}) {
    regions.insert(testing::region_of(pool, p));
  }
  EXPECT_EQ(regions.size(), 4u)
      << "persistent, feature map, ephemeral and small blocks must not share regions";
  EXPECT_EQ(testing::region_of(pool, scratch), testing::region_of(pool, small_fm))
      << "small blocks of any non-persistent kind share the small-block regions";
  EXPECT_EQ(testing::region_of(pool, big_scratch), testing::region_of(pool, gradient))
      << "gradient maps and temporaries, both ephemeral, share regions apart from feature maps";
  const auto stats = pool.stats(job);
  EXPECT_EQ(stats.by_kind[index_of(alloc_kind::persistent)].live_bytes, 512 * KiB);
  EXPECT_EQ(stats.by_kind[index_of(alloc_kind::feature_map)].live_bytes, 520 * KiB);
  EXPECT_EQ(stats.by_kind[index_of(alloc_kind::temporary)].live_bytes, 516 * KiB);
  EXPECT_EQ(stats.reserved_bytes, 4 * 2 * MiB);
}

TEST_F(DevicePool, ShortOfRegionsARequestUsesFreeRoomInAnotherClassRatherThanFailing) {
  device_pool pool(backend_, small_pool(64 * MiB, 4 * MiB));  // two regions
  const auto job = pool.add_job("a");
  void* weights = pool.allocate(job, *stream_, 1 * MiB, alloc_kind::persistent);
  void* feature = pool.allocate(job, *stream_, 512 * KiB, alloc_kind::feature_map);
  ASSERT_EQ(pool.stats(job).reserved_bytes, 4 * MiB) << "the budget is now fully borrowed";

  // No transient region can be borrowed: the tightest free block of another class serves, the
  // persistent region's free half, then the feature-map region's; after that nothing is left.
  void* scratch = pool.allocate(job, *stream_, 1 * MiB, alloc_kind::temporary);
  EXPECT_EQ(testing::region_of(pool, scratch), testing::region_of(pool, weights));
  void* more = pool.allocate(job, *stream_, 1 * MiB, alloc_kind::temporary);
  EXPECT_EQ(testing::region_of(pool, more), testing::region_of(pool, feature));
  EXPECT_EQ(pool.stats(job).other_class_reuses, 2u);
  EXPECT_EQ(pool.stats(job).out_of_memory, 0u);
  EXPECT_THROW((void)pool.allocate(job, *stream_, 1 * MiB, alloc_kind::temporary),
               out_of_memory_error);

  // A borrowed block goes back to its region's class when freed: with the feature map and the
  // scratch beside it gone, that region is empty and returns to the budget, and a transient
  // region can be borrowed again.
  pool.deallocate(job, more);
  pool.deallocate(job, feature);
  stream_->synchronize();
  void* fresh = pool.allocate(job, *stream_, 2 * MiB, alloc_kind::temporary);
  EXPECT_EQ(pool.stats(job).other_class_reuses, 2u) << "a region of its own class";
  for (void* p : {weights, scratch, fresh}) pool.deallocate(job, p);
}

// A small block must be small against the region too: with 2 MiB regions and the default 1 MiB
// threshold, 512 KiB gradients shared regions with gradients of a few KiB that live the whole
// iteration, and their holes ended just short of 512 KiB (a job of two ResNet-20s under 10 MiB
// then failed with 5.5 MiB free in its regions).
TEST_F(DevicePool, SmallBlocksAreAtMostAnEighthOfARegion) {
  pool_options options;
  EXPECT_EQ(options.small_block_limit(), 1 * MiB) << "64 MiB regions: the threshold";
  options.region_size = 2 * MiB;
  EXPECT_EQ(options.small_block_limit(), 256 * KiB);
  options.small_threshold = 64 * KiB;
  EXPECT_EQ(options.small_block_limit(), 64 * KiB);

  auto two_mib = small_pool();
  two_mib.small_threshold = 1 * MiB;
  device_pool pool(backend_, two_mib);
  const auto job = pool.add_job("a");
  void* tiny = pool.allocate(job, *stream_, 9 * KiB, alloc_kind::gradient);
  void* map_gradient = pool.allocate(job, *stream_, 512 * KiB, alloc_kind::gradient);
  EXPECT_NE(testing::region_of(pool, tiny), testing::region_of(pool, map_gradient));
  for (void* p : {tiny, map_gradient}) pool.deallocate(job, p);
}

// Small gradients share the small-block regions until many of them (more than a region's worth
// and more than 48) have been live at once; from then on they go to regions of their own, so
// that their holes, left as the backward pass frees them, do not pin regions that longer-lived
// small blocks hold too (MobileNetV2's largest batch under capuchin in 48 MiB: 45 with them
// shared, 85 apart). Fewer, larger ones stay (the LSTM: 41 at once, 77 KiB on average).
TEST_F(DevicePool, ManySmallGradientsGetRegionsOfTheirOwn) {
  device_pool pool(backend_, small_pool());  // 2 MiB regions, small blocks under 256 KiB
  const auto job = pool.add_job("a");
  void* statistics = pool.allocate(job, *stream_, 8 * KiB, alloc_kind::feature_map);
  std::vector<void*> gradients;
  std::set<std::size_t> shared;
  const auto allocate_gradients = [&](int count, std::size_t bytes) {
    for (int k = 0; k < count; ++k) {
      gradients.push_back(pool.allocate(job, *stream_, bytes, alloc_kind::gradient));
      shared.insert(testing::region_of(pool, gradients.back()));
    }
  };
  // 17 of 128 KiB: past a region's worth, but few; they stay among the small blocks.
  allocate_gradients(17, 128 * KiB);
  // 32 of 8 KiB more: 49 live, the last one still among the small blocks.
  allocate_gradients(32, 8 * KiB);
  EXPECT_TRUE(shared.contains(testing::region_of(pool, statistics)))
      << "few small gradients fill the small-block regions' holes";
  void* apart = pool.allocate(job, *stream_, 8 * KiB, alloc_kind::gradient);
  EXPECT_FALSE(shared.contains(testing::region_of(pool, apart)))
      << "past 48 at once, they take regions of their own";
  void* temporary = pool.allocate(job, *stream_, 8 * KiB, alloc_kind::temporary);
  EXPECT_TRUE(shared.contains(testing::region_of(pool, temporary)))
      << "other small blocks stay in the small-block regions";

  // Apart for good: with every gradient freed, the next one still goes to their regions.
  for (void* p : gradients) pool.deallocate(job, p);
  stream_->synchronize();
  void* later = pool.allocate(job, *stream_, 128 * KiB, alloc_kind::gradient);
  EXPECT_EQ(testing::region_of(pool, later), testing::region_of(pool, apart));
  for (void* p : {statistics, apart, temporary, later}) pool.deallocate(job, p);
  EXPECT_EQ(pool.stats(job).live_bytes, 0u);
}

/// Lets every borrow through and refuses every wait, keeping what each wait was told.
class refusing_gate final : public borrow_gate {
 public:
  bool try_reserve(job_id, std::size_t) noexcept override { return true; }
  void cancel(job_id, std::size_t) noexcept override {}
  void returned(job_id, std::size_t) noexcept override {}
  wait_answer wait_for_regions(job_id, std::size_t bytes, const own_room& room) override {
    waits.push_back({bytes, room});
    return room.can_make_room && make_room ? wait_answer::make_room : wait_answer::fail;
  }
  bool make_room = false;  ///< answer make_room where the job can
  void wait_ended(job_id) noexcept override {}
  struct wait {
    std::size_t bytes;
    own_room room;
  };
  std::vector<wait> waits;
};

// The policy restarts a lone job whose own regions hold room enough in pieces (policy_driver),
// but not where another class's free block serves: the pool tells the gate both.
TEST_F(DevicePool, AWaitForRegionsIsToldTheRoomTheJobsOwnRegionsHoldInPieces) {
  device_pool pool(backend_, small_pool(64 * MiB, 4 * MiB));  // two regions
  refusing_gate gate;
  pool.set_borrow_gate(&gate);
  const auto job = pool.add_job("a");
  void* weights = pool.allocate(job, *stream_, 1 * MiB, alloc_kind::persistent);
  void* feature = pool.allocate(job, *stream_, 512 * KiB, alloc_kind::feature_map);
  EXPECT_THROW((void)pool.allocate(job, *stream_, 3 * MiB, alloc_kind::temporary),
               out_of_memory_error);
  ASSERT_EQ(gate.waits.size(), 1u);
  EXPECT_EQ(gate.waits[0].bytes, 3 * MiB);
  EXPECT_EQ(gate.waits[0].room.free_bytes, 4 * MiB - 1 * MiB - 512 * KiB);
  EXPECT_FALSE(gate.waits[0].room.another_class_fits);
  // 1 MiB fits the persistent region's free half: the pool takes it once the wait is refused.
  void* scratch = pool.allocate(job, *stream_, 1 * MiB, alloc_kind::temporary);
  ASSERT_EQ(gate.waits.size(), 2u);
  EXPECT_TRUE(gate.waits[1].room.another_class_fits);
  EXPECT_EQ(testing::region_of(pool, scratch), testing::region_of(pool, weights));
  pool.deallocate(job, scratch);
  pool.set_borrow_gate(nullptr);
  for (void* p : {weights, feature}) pool.deallocate(job, p);
}

TEST_F(DevicePool, ReusesTheBestFittingFreeBlock) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("a");
  void* big = pool.allocate(job, *stream_, 768 * KiB);
  void* keep1 = pool.allocate(job, *stream_, 256 * KiB);
  void* mid = pool.allocate(job, *stream_, 384 * KiB);
  void* keep2 = pool.allocate(job, *stream_, 256 * KiB);
  pool.deallocate(job, big);
  pool.deallocate(job, mid);
  EXPECT_EQ(pool.allocate(job, *stream_, 300 * KiB), mid) << "best fit picks the 384 KiB hole";
  EXPECT_EQ(pool.allocate(job, *stream_, 700 * KiB), big);
  (void)keep1;
  (void)keep2;
}

TEST_F(DevicePool, CoalescesNeighboursAndReturnsEmptyRegions) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("a");
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate(job, *stream_, 512 * KiB));
  EXPECT_EQ(pool.stats(job).reserved_bytes, 2 * MiB);
  for (void* p : {blocks[1], blocks[3], blocks[0], blocks[2]}) pool.deallocate(job, p);
  stream_->synchronize();
  pool.poll(job);
  EXPECT_EQ(pool.stats(job).reserved_bytes, 0u) << "the whole region came back together";
  EXPECT_EQ(pool.stats().free_regions, 32u);
  EXPECT_EQ(pool.stats(job).regions_returned, 1u);
}

TEST_F(DevicePool, LargeRequestsTakeContiguousRunsAndShareTheRemainder) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("a");
  auto* big = static_cast<std::byte*>(pool.allocate(job, *stream_, 5 * MiB));
  EXPECT_EQ(pool.stats(job).reserved_bytes, 6 * MiB);
  auto* tail = static_cast<std::byte*>(pool.allocate(job, *stream_, MiB));
  EXPECT_EQ(tail, big + 5 * MiB) << "the last region's remainder serves the next large block";
  EXPECT_EQ(pool.stats(job).reserved_bytes, 6 * MiB);
}

TEST_F(DevicePool, BudgetCapsRegionsAcrossJobs) {
  device_pool pool(backend_, small_pool(64 * MiB, 8 * MiB));
  const auto a = pool.add_job("a");
  const auto b = pool.add_job("b");
  void* pa = pool.allocate(a, *stream_, 6 * MiB);
  EXPECT_THROW((void)pool.allocate(b, *stream_, 4 * MiB), out_of_memory_error);
  void* pb = pool.allocate(b, *stream_, 2 * MiB);
  EXPECT_EQ(pool.stats().reserved_bytes, 8 * MiB);
  EXPECT_EQ(pool.stats(b).out_of_memory, 1u);
  pool.deallocate(a, pa);
  EXPECT_NO_THROW((void)pool.allocate(b, *stream_, 4 * MiB)) << "freed regions pass to b";
  (void)pb;
}

/// Frees the job's oldest blocks one by one when asked, as a passive swapper would (at either
/// moment), or only instead of failing, as a plan executor does.
class freeing_relief final : public pressure_relief {
 public:
  freeing_relief(device_pool& pool, job_id job, bool last_resort_only = false)
      : pool_(pool), job_(job), last_resort_only_(last_resort_only) {}
  void hold(void* ptr) { held_.push_back(ptr); }
  bool relieve(job_id job, std::size_t bytes, relief_moment moment) override {
    asked.push_back({job, bytes});
    moments.push_back(moment);
    if (last_resort_only_ && moment != relief_moment::instead_of_failing) return false;
    if (held_.empty()) return false;
    pool_.deallocate(job_, held_.front());
    held_.erase(held_.begin());
    return true;
  }
  std::vector<std::pair<job_id, std::size_t>> asked;
  std::vector<relief_moment> moments;

 private:
  device_pool& pool_;
  job_id job_;
  bool last_resort_only_;
  std::vector<void*> held_;
};

TEST_F(DevicePool, AJobOutOfMemoryFirstGivesUpItsOwnBlocksThroughItsRelief) {
  device_pool pool(backend_, small_pool(64 * MiB, 8 * MiB));
  const auto a = pool.add_job("a");
  const auto b = pool.add_job("b");
  freeing_relief relief(pool, a);
  pool.set_pressure_relief(a, &relief);
  for (int i = 0; i < 3; ++i) relief.hold(pool.allocate(a, *stream_, 2 * MiB));
  void* other = pool.allocate(b, *stream_, 2 * MiB);  // the budget is now full

  void* big = pool.allocate(a, *stream_, 4 * MiB);  // two of a's blocks make room
  ASSERT_NE(big, nullptr);
  ASSERT_EQ(relief.asked.size(), 2u);
  EXPECT_EQ(relief.asked[0].first, a);
  EXPECT_EQ(relief.asked[0].second, 4 * MiB);
  EXPECT_LE(pool.stats().reserved_bytes, 8 * MiB);
  EXPECT_EQ(pool.stats(a).out_of_memory, 0u);

  // Nothing left to give: the allocation fails as it would without a relief, and b is untouched.
  // With no gate to wait on, the relief is asked once more before the failure.
  EXPECT_THROW((void)pool.allocate(a, *stream_, 4 * MiB), out_of_memory_error);
  EXPECT_EQ(relief.asked.back().first, a);
  EXPECT_EQ(relief.moments.back(), relief_moment::instead_of_failing);
  EXPECT_THROW((void)pool.allocate(b, *stream_, 4 * MiB), out_of_memory_error)
      << "only the job that set a relief is relieved";
  EXPECT_EQ(relief.asked.size(), 5u);

  pool.set_pressure_relief(a, nullptr);
  pool.deallocate(a, big);
  pool.deallocate(b, other);
}

// A relief of last resort (a plan executor's) frees nothing before the gate has judged; where
// the gate answers make_room it does, and a gate asked again after a relief that could not
// serve hears that the job can make no more room.
TEST_F(DevicePool, AReliefOfLastResortIsAskedWhereTheGateSaysMakeRoom) {
  device_pool pool(backend_, small_pool(64 * MiB, 8 * MiB));
  refusing_gate gate;
  pool.set_borrow_gate(&gate);
  const auto a = pool.add_job("a");
  const auto b = pool.add_job("b");
  freeing_relief relief(pool, a, true);
  pool.set_pressure_relief(a, &relief);
  for (int i = 0; i < 3; ++i) relief.hold(pool.allocate(a, *stream_, 2 * MiB));
  void* other = pool.allocate(b, *stream_, 2 * MiB);  // the budget is now full

  // The gate fails it: the relief was asked only before waiting, and freed nothing.
  EXPECT_THROW((void)pool.allocate(a, *stream_, 2 * MiB), out_of_memory_error);
  ASSERT_EQ(gate.waits.size(), 1u);
  EXPECT_TRUE(gate.waits[0].room.can_make_room);
  EXPECT_EQ(relief.moments, std::vector{relief_moment::before_waiting});

  gate.make_room = true;
  void* made = pool.allocate(a, *stream_, 2 * MiB);  // one of a's blocks makes room
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(gate.waits.size(), 2u);
  EXPECT_EQ(relief.moments.back(), relief_moment::instead_of_failing);

  // 6 MiB cannot fit in 8 beside b's 2 and made's 2 however much a frees of the rest: after the
  // relief gave all it had, the gate is asked again, told that no more room can be made.
  EXPECT_THROW((void)pool.allocate(a, *stream_, 6 * MiB), out_of_memory_error);
  EXPECT_FALSE(gate.waits.back().room.can_make_room);
  EXPECT_TRUE(gate.waits[gate.waits.size() - 2].room.can_make_room);
  EXPECT_LE(pool.stats().reserved_bytes, 8 * MiB);

  pool.set_pressure_relief(a, nullptr);
  pool.set_borrow_gate(nullptr);
  pool.deallocate(a, made);
  pool.deallocate(b, other);
}

// A prefetch may be put off: under a no_wait_scope the pool neither asks the relief nor waits on
// the gate, and the refusal is not the job's out-of-memory failure.
TEST_F(DevicePool, AnAllocationThatMayBePutOffTakesOnlyWhatIsFreeNow) {
  device_pool pool(backend_, small_pool(64 * MiB, 4 * MiB));
  refusing_gate gate;
  pool.set_borrow_gate(&gate);
  const auto a = pool.add_job("a");
  freeing_relief relief(pool, a);
  pool.set_pressure_relief(a, &relief);
  void* held = pool.allocate(a, *stream_, 2 * MiB);
  {
    const no_wait_scope ahead;
    EXPECT_TRUE(no_wait_scope::here());
    void* fits = pool.allocate(a, *stream_, 2 * MiB);  // free now
    try {
      (void)pool.allocate(a, *stream_, 2 * MiB);
      ADD_FAILURE() << "nothing was free";
    } catch (const out_of_memory_error& refused) {
      EXPECT_TRUE(refused.report().put_off);
    }
    pool.deallocate(a, fits);
  }
  EXPECT_FALSE(no_wait_scope::here());
  EXPECT_TRUE(relief.asked.empty());
  EXPECT_TRUE(gate.waits.empty());
  EXPECT_EQ(pool.stats(a).out_of_memory, 0u);
  pool.set_pressure_relief(a, nullptr);
  pool.set_borrow_gate(nullptr);
  pool.deallocate(a, held);
}

TEST_F(DevicePool, AReliefIsClearedOnlyByItsOwner) {
  device_pool pool(backend_, small_pool(64 * MiB, 8 * MiB));
  const auto a = pool.add_job("a");
  freeing_relief first(pool, a);
  freeing_relief second(pool, a);
  pool.set_pressure_relief(a, &first);
  pool.set_pressure_relief(a, &second);
  pool.clear_pressure_relief(a, &first);  // replaced since: stays
  EXPECT_EQ(pool.pressure_relief_of(a), &second);
  pool.clear_pressure_relief(a, &second);
  EXPECT_EQ(pool.pressure_relief_of(a), nullptr);
}

TEST_F(DevicePool, AJobLimitIsAPartitionInsideTheBudget) {
  device_pool pool(backend_, small_pool(64 * MiB));
  const auto a = pool.add_job("a");
  const auto b = pool.add_job("b");
  pool.set_job_limit(a, 8 * MiB);
  void* held = pool.allocate(a, *stream_, 6 * MiB);
  try {
    (void)pool.allocate(a, *stream_, 4 * MiB);
    FAIL() << "a job outgrew its partition";
  } catch (const out_of_memory_error& oom) {
    EXPECT_EQ(oom.report().job_limit, 8 * MiB);
    EXPECT_NE(std::string(oom.what()).find("partition of 8.00 MiB"), std::string::npos);
  }
  EXPECT_NO_THROW((void)pool.allocate(b, *stream_, 32 * MiB)) << "b has no partition";
  pool.set_job_limit(a, 0);
  EXPECT_NO_THROW((void)pool.allocate(a, *stream_, 4 * MiB));
  (void)held;
}

TEST_F(DevicePool, LoweringTheBudgetNeverBreaksLiveAllocations) {
  device_pool pool(backend_, small_pool(64 * MiB));
  const auto job = pool.add_job("a");
  void* p = pool.allocate(job, *stream_, 16 * MiB);
  std::memset(p, 1, 16 * MiB);
  pool.set_budget(8 * MiB);
  EXPECT_EQ(pool.budget(), 8 * MiB);
  EXPECT_EQ(pool.stats().reserved_bytes, 16 * MiB);
  EXPECT_THROW((void)pool.allocate(job, *stream_, 2 * MiB), out_of_memory_error);
  pool.deallocate(job, p);
  void* q = pool.allocate(job, *stream_, 8 * MiB);
  EXPECT_NE(q, nullptr);
  EXPECT_LE(pool.stats().reserved_bytes, 8 * MiB);
  EXPECT_THROW(pool.set_budget(65 * MiB), usage_error);
}

TEST_F(DevicePool, OutOfMemoryReportsTheNumbersAndWhatToChange) {
  device_pool pool(backend_, small_pool(64 * MiB, 8 * MiB));
  const auto job = pool.add_job("resnet");
  void* held = pool.allocate(job, *stream_, 6 * MiB, alloc_kind::feature_map);
  try {
    (void)pool.allocate(job, *stream_, 3 * MiB, alloc_kind::feature_map);
    FAIL() << "no out-of-memory error";
  } catch (const out_of_memory_error& oom) {
    const std::string what = oom.what();
    EXPECT_EQ(oom.report().requested_bytes, 3 * MiB);
    EXPECT_EQ(oom.report().job_live_bytes, 6 * MiB);
    EXPECT_EQ(oom.report().budget, 8 * MiB);
    for (const char* needle :
         {"resnet", "3.00 MiB", "feature_map", "8.00 MiB budget", "--budget"}) {
      EXPECT_NE(what.find(needle), std::string::npos) << needle << " missing from:\n" << what;
    }
  }
  try {
    (void)pool.allocate(job, *stream_, 100 * MiB);
    FAIL() << "no out-of-memory error";
  } catch (const out_of_memory_error& oom) {
    EXPECT_NE(std::string(oom.what()).find("whole capacity"), std::string::npos) << oom.what();
  }
  pool.deallocate(job, held);
}

TEST_F(DevicePool, RemovingAJobReturnsWhatItNoLongerUsesAndOthersCarryOn) {
  device_pool pool(backend_, small_pool(64 * MiB, 16 * MiB));
  const auto failing = pool.add_job("failing");
  const auto other = pool.add_job("other");
  void* kept = pool.allocate(other, *stream_, 4 * MiB);
  void* freed = pool.allocate(failing, *stream_, 6 * MiB);
  pool.deallocate(failing, freed);
  EXPECT_EQ(pool.remove_job(failing), 0u);
  EXPECT_EQ(pool.stats().jobs, 1u);
  EXPECT_EQ(pool.stats().reserved_bytes, 4 * MiB);
  EXPECT_NO_THROW((void)pool.allocate(other, *stream_, 12 * MiB));
  EXPECT_THROW((void)pool.stats(failing), usage_error);
  EXPECT_EQ(pool.deallocate(other, kept), free_status::ok);
}

// Regression (issue 14): a job that failed mid-iteration left tensors alive; remove_job gave
// their regions to the next job, whose block the late free then released while it was in use.
TEST_F(DevicePool, TensorsLeftBehindKeepTheirRegionsUntilFreed) {
  device_pool pool(backend_, small_pool(64 * MiB, 16 * MiB));
  std::vector<std::string> messages;
  pool.set_diagnostic_handler([&](const std::string& message) { messages.push_back(message); });
  const auto failing = pool.add_job("failing");
  void* left_behind = pool.allocate(failing, *stream_, 10 * MiB);
  void* small = pool.allocate(failing, *stream_, 100 * KiB);
  void* gone = pool.allocate(failing, *stream_, 2 * MiB, alloc_kind::persistent);
  pool.deallocate(failing, gone);
  EXPECT_EQ(pool.remove_job(failing), 10 * MiB + 100 * KiB);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("'failing'"), std::string::npos) << messages[0];
  EXPECT_EQ(pool.stats().jobs, 0u);
  EXPECT_EQ(pool.stats().reserved_bytes, 12 * MiB) << "the persistent region went back";
  EXPECT_THROW((void)pool.allocate(failing, *stream_, 1 * MiB), usage_error);

  const auto next = pool.add_job("next");
  EXPECT_NE(next, failing) << "the retired job's id stays taken while its memory is";
  EXPECT_THROW((void)pool.allocate(next, *stream_, 8 * MiB), out_of_memory_error)
      << "the budget counts the regions the retired job still holds";
  void* mine = pool.allocate(next, *stream_, 4 * MiB);
  // The late frees find the retired job by their regions and never touch the new owner's block.
  EXPECT_EQ(pool.deallocate(*pool.owner_of(left_behind), left_behind), free_status::ok);
  EXPECT_EQ(pool.deallocate(*pool.owner_of(small), small), free_status::ok);
  EXPECT_EQ(pool.stats().reserved_bytes, 4 * MiB);
  EXPECT_EQ(pool.stats().invalid_frees, 0u);
  EXPECT_FALSE(pool.owner_of(left_behind).has_value());
  EXPECT_NO_THROW((void)pool.allocate(next, *stream_, 8 * MiB));
  EXPECT_EQ(pool.stats(next).live_bytes, 12 * MiB);
  EXPECT_EQ(pool.deallocate(next, mine), free_status::ok);
  // The drained job's slot is free again.
  EXPECT_NO_THROW((void)pool.add_job("third"));
}

TEST_F(DevicePool, RecordsOneEventPerGranuleOfFreedBytes) {
  auto options = small_pool();
  options.event_granularity = 4 * MiB;
  device_pool pool(backend_, options);
  const auto job = pool.add_job("a");
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(pool.allocate(job, *stream_, 512 * KiB));
  void* pin = pool.allocate(job, *stream_, 1 * MiB);  // keeps the regions from emptying
  for (std::size_t i = 0; i < blocks.size(); i += 2) pool.deallocate(job, blocks[i]);  // 4 MiB
  EXPECT_EQ(pool.stats(job).events_recorded, 1u) << "8 frees of 512 KiB make one 4 MiB batch";
  (void)pin;
}

TEST_F(DevicePool, TraceRecordsEveryMove) {
  device_pool pool(backend_, small_pool());
  trace_recorder recorder;
  pool.set_trace_sink(&recorder);
  const auto job = pool.add_job("a");
  void* p = pool.allocate(job, *stream_, 3 * MiB, alloc_kind::gradient);
  pool.deallocate(job, p);
  stream_->synchronize();
  pool.poll(job);
  pool.set_trace_sink(nullptr);
  const auto events = recorder.events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].op, trace_op::region_borrow);
  EXPECT_EQ(events[0].bytes, 4 * MiB);
  EXPECT_EQ(events[1].op, trace_op::alloc);
  EXPECT_EQ(events[1].kind, alloc_kind::gradient);
  EXPECT_EQ(events[1].bytes, 3 * MiB);
  EXPECT_EQ(events[1].stream, stream_->id());
  EXPECT_EQ(events[2].op, trace_op::free);
  EXPECT_EQ(events[3].op, trace_op::region_return);
  EXPECT_LE(events[0].time_ns, events[3].time_ns);
}

TEST(PoolOptions, ValidateNamesTheBadField) {
  auto expect_error = [](pool_options options, const char* field) {
    try {
      options.validate();
      ADD_FAILURE() << "accepted a bad " << field;
    } catch (const config_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  pool_options options;
  options.region_size = MiB;
  expect_error(options, "region_size");
  options = {};
  options.region_size = 3 * MiB;
  expect_error(options, "region_size");
  options = {};
  options.budget = 2 * options.capacity;
  expect_error(options, "budget");
  options = {};
  options.capacity = MiB;
  expect_error(options, "capacity");
  options = {};
  options.granularity = 100;
  expect_error(options, "granularity");
  options = {};
  options.max_jobs = 0;
  expect_error(options, "max_jobs");
  EXPECT_NO_THROW(pool_options{}.validate());
}

}  // namespace
}  // namespace tandem::memory
