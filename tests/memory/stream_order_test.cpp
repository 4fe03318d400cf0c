// The pool's stream contract: memory passes to another stream or job only once the device is
// done with it (Waterwave §4.2, Zico §6.1). A gate holds a stream's work back to make the device
// "busy" for as long as a test needs.

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "pool_fixture.hpp"

namespace tandem::memory {
namespace {

using namespace std::chrono_literals;
using testing::gate;
using testing::small_pool;

class StreamOrder : public ::testing::Test {
 protected:
  device::cpu_backend backend_;
  std::unique_ptr<device::stream> a_ = backend_.create_stream("a", device::stream_kind::compute);
  std::unique_ptr<device::stream> b_ = backend_.create_stream("b", device::stream_kind::compute);
};

TEST_F(StreamOrder, TheSameStreamReusesAFreedBlockAtOnce) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("j");
  gate busy;
  busy.close_on(*a_);
  void* p = pool.allocate(job, *a_, MiB);
  pool.deallocate(job, p);
  EXPECT_EQ(pool.allocate(job, *a_, MiB), p) << "in-order stream: no need to wait";
  EXPECT_EQ(pool.stats(job).same_stream_reuses, 1u);
  EXPECT_EQ(pool.stats(job).host_syncs, 0u);
}

TEST_F(StreamOrder, AnotherStreamGetsFreshMemoryWhileTheBlockIsPending) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("j");
  gate busy;
  busy.close_on(*a_);
  void* p = pool.allocate(job, *a_, MiB);
  pool.deallocate(job, p);
  void* q = pool.allocate(job, *b_, MiB);
  EXPECT_NE(q, p) << "stream b must not touch memory stream a may still be using";
  EXPECT_EQ(pool.stats(job).cross_stream_waits, 0u);
}

TEST_F(StreamOrder, AnotherStreamTakesAPendingBlockOnlyBehindAWait) {
  // Budget of one region: stream b can only get a's block, and must wait for a's work.
  device_pool pool(backend_, small_pool(64 * MiB, 2 * MiB));
  const auto job = pool.add_job("j");
  gate busy;
  std::atomic<bool> a_done{false};
  void* p = pool.allocate(job, *a_, 2 * MiB);
  busy.close_on(*a_);
  a_->launch_host([&] { a_done = true; });
  pool.deallocate(job, p);
  void* q = pool.allocate(job, *b_, 2 * MiB);
  EXPECT_EQ(q, p);
  EXPECT_EQ(pool.stats(job).cross_stream_waits, 1u);
  bool a_done_first = false;
  b_->launch_host([&] { a_done_first = a_done.load(); });
  busy.open();
  b_->synchronize();
  EXPECT_TRUE(a_done_first) << "b's work ran before a finished with the block";
}

TEST_F(StreamOrder, AnotherJobWaitsForTheDeviceBeforeTakingARegion) {
  device_pool pool(backend_, small_pool(64 * MiB, 4 * MiB));
  const auto first = pool.add_job("first");
  const auto second = pool.add_job("second");
  gate busy;
  std::atomic<bool> first_done{false};
  void* p = pool.allocate(first, *a_, 4 * MiB);
  busy.close_on(*a_);
  a_->launch_host([&] { first_done = true; });
  pool.deallocate(first, p);  // host side done; the device is not
  auto taken = std::async(std::launch::async, [&] {
    void* q = pool.allocate(second, *b_, 4 * MiB);
    return std::make_pair(q, first_done.load());
  });
  EXPECT_EQ(taken.wait_for(50ms), std::future_status::timeout)
      << "the second job got the region while the first job's work was pending";
  busy.open();
  const auto [q, done_before] = taken.get();
  EXPECT_EQ(q, p);
  EXPECT_TRUE(done_before);
  EXPECT_EQ(pool.stats(second).host_syncs, 1u);
}

TEST_F(StreamOrder, RecordStreamKeepsABlockUntilTheOtherStreamIsDone) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("j");
  auto copy = backend_.create_stream("copy", device::stream_kind::copy);
  gate copying;
  void* p = pool.allocate(job, *a_, MiB);
  copying.close_on(*copy);
  pool.record_stream(job, p, *copy);
  pool.deallocate(job, p);
  void* q = pool.allocate(job, *a_, MiB);
  EXPECT_NE(q, p) << "the copy stream still uses the block";
  EXPECT_GT(pool.stats(job).unsynced_bytes, 0u);
  copying.open();
  copy->synchronize();
  a_->synchronize();
  pool.synchronize(job);
  EXPECT_EQ(pool.allocate(job, *b_, MiB), p);
}

TEST_F(StreamOrder, CompletedFreesBecomeSyncedForEveryStream) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("j");
  void* keep = pool.allocate(job, *a_, 256 * KiB);  // keeps the region borrowed
  void* p = pool.allocate(job, *a_, MiB);
  pool.deallocate(job, p);
  a_->synchronize();
  pool.synchronize(job);
  EXPECT_EQ(pool.stats(job).unsynced_bytes, 0u);
  const auto synced_before = pool.stats(job).synced_reuses;
  EXPECT_EQ(pool.allocate(job, *b_, MiB), p);
  EXPECT_EQ(pool.stats(job).synced_reuses, synced_before + 1);
  EXPECT_EQ(pool.stats(job).cross_stream_waits, 0u);
  (void)keep;
}

TEST_F(StreamOrder, DetachingAStreamWithLiveBlocksIsRefused) {
  device_pool pool(backend_, small_pool());
  const auto job = pool.add_job("j");
  void* p = pool.allocate(job, *a_, MiB);
  EXPECT_THROW(pool.detach_stream(job, *a_), usage_error);
  pool.deallocate(job, p);
  EXPECT_NO_THROW(pool.detach_stream(job, *a_));
  EXPECT_EQ(pool.stats(job).unsynced_bytes, 0u);
}

}  // namespace
}  // namespace tandem::memory
