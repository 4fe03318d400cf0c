// Misuse of the pool is reported and leaves it untouched.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pool_fixture.hpp"
#include "tandem/common/error.hpp"
#include "tandem/memory/out_of_memory.hpp"

namespace tandem::memory {
namespace {

using testing::small_pool;

class PoolErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_.set_diagnostic_handler([this](const std::string& m) { messages_.push_back(m); });
    owner_ = pool_.add_job("owner");
    other_ = pool_.add_job("other");
    block_ = pool_.allocate(owner_, *stream_, MiB);
    before_ = pool_.stats(owner_);
  }
  void expect_unchanged() {
    const auto after = pool_.stats(owner_);
    EXPECT_EQ(after.live_bytes, before_.live_bytes);
    EXPECT_EQ(after.reserved_bytes, before_.reserved_bytes);
    EXPECT_EQ(after.frees, before_.frees);
    // The block is still live and freeable exactly once.
    EXPECT_EQ(pool_.deallocate(owner_, block_), free_status::ok);
  }

  device::cpu_backend backend_;
  std::unique_ptr<device::stream> stream_ =
      backend_.create_stream("s", device::stream_kind::compute);
  device_pool pool_{backend_, small_pool()};
  std::vector<std::string> messages_;
  job_id owner_ = 0;
  job_id other_ = 0;
  void* block_ = nullptr;
  job_stats before_;
};

TEST_F(PoolErrors, ForeignPointerIsRefused) {
  int on_stack = 0;
  EXPECT_EQ(pool_.deallocate(owner_, &on_stack), free_status::foreign_pointer);
  ASSERT_EQ(messages_.size(), 1u);
  EXPECT_NE(messages_[0].find("foreign pointer"), std::string::npos) << messages_[0];
  EXPECT_NE(messages_[0].find("'owner'"), std::string::npos) << messages_[0];
  EXPECT_EQ(pool_.stats().invalid_frees, 1u);
  expect_unchanged();
}

TEST_F(PoolErrors, FreeFromTheWrongJobIsRefused) {
  EXPECT_EQ(pool_.deallocate(other_, block_), free_status::wrong_job);
  ASSERT_EQ(messages_.size(), 1u);
  EXPECT_NE(messages_[0].find("does not own"), std::string::npos) << messages_[0];
  expect_unchanged();
}

TEST_F(PoolErrors, DoubleFreeIsRefused) {
  void* second = pool_.allocate(owner_, *stream_, MiB);  // keeps the region borrowed
  EXPECT_EQ(pool_.deallocate(owner_, second), free_status::ok);
  EXPECT_EQ(pool_.deallocate(owner_, second), free_status::not_allocated);
  EXPECT_EQ(pool_.stats(owner_).invalid_frees, 1u);
  before_ = pool_.stats(owner_);
  expect_unchanged();
}

TEST_F(PoolErrors, InteriorPointerIsRefused) {
  EXPECT_EQ(pool_.deallocate(owner_, static_cast<std::byte*>(block_) + 512),
            free_status::not_allocated);
  expect_unchanged();
}

TEST_F(PoolErrors, FreeInAFreeRegionIsRefused) {
  const auto* far = pool_.base() + 40 * MiB;  // inside the pool, in no job's region
  EXPECT_EQ(pool_.deallocate(owner_, const_cast<std::byte*>(far)), free_status::not_allocated);
  expect_unchanged();
}

TEST_F(PoolErrors, UnknownJobIsRefusedOnFreeAndThrowsOnAllocate) {
  EXPECT_EQ(pool_.deallocate(77, block_), free_status::unknown_job);
  EXPECT_EQ(pool_.deallocate(1u << 30, block_), free_status::unknown_job);
  try {
    (void)pool_.allocate(77, *stream_, MiB);
    FAIL() << "allocated for an unknown job";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("add_job"), std::string::npos) << e.what();
  }
  expect_unchanged();
}

TEST_F(PoolErrors, RecordStreamOnAForeignPointerThrows) {
  int on_stack = 0;
  EXPECT_THROW(pool_.record_stream(owner_, &on_stack, *stream_), usage_error);
  EXPECT_THROW(pool_.record_stream(other_, block_, *stream_), usage_error);
  expect_unchanged();
}

TEST(PoolLimits, TooManyJobsIsAClearError) {
  device::cpu_backend backend;
  auto options = small_pool();
  options.max_jobs = 2;
  device_pool pool(backend, options);
  (void)pool.add_job("a");
  const auto b = pool.add_job("b");
  EXPECT_THROW((void)pool.add_job("c"), usage_error);
  pool.remove_job(b);
  EXPECT_NO_THROW((void)pool.add_job("c")) << "a removed job's slot is reused";
}

TEST(PoolLimits, OutOfMemorySaysWhetherTheJobAloneExceedsTheBudget) {
  device::cpu_backend backend;
  device_pool pool(backend, small_pool(64 * MiB, 16 * MiB));
  const auto stream = backend.create_stream("s", device::stream_kind::compute);
  const auto a = pool.add_job("a");
  const auto b = pool.add_job("b");
  const auto message = [&](job_id job) {
    try {
      (void)pool.allocate(job, *stream, 10 * MiB);
    } catch (const out_of_memory_error& e) {
      return std::string(e.what());
    }
    return std::string("allocated");
  };
  auto* held = pool.allocate(a, *stream, 8 * MiB);
  // a holds the whole of what is held: staggering it with other jobs cannot help.
  const auto alone = message(a);
  EXPECT_NE(alone.find("the job alone needs more than the budget"), std::string::npos) << alone;
  EXPECT_NE(alone.find("footprint planner"), std::string::npos) << alone;
  // What is free is what the budget leaves, not the capacity's 56 MiB of free regions.
  EXPECT_NE(alone.find("8.00 MiB free within the budget"), std::string::npos) << alone;
  // b's request fails because of a's memory: staggering them can.
  const auto beside = message(b);
  EXPECT_NE(beside.find("run fewer jobs at once"), std::string::npos) << beside;
  EXPECT_EQ(pool.deallocate(a, held), free_status::ok);
}

TEST(PoolLimits, ACapacityTheDeviceCannotGiveIsADeviceError) {
  device::cpu_backend backend({.memory_limit = 32 * MiB});
  EXPECT_THROW(device_pool(backend, small_pool(64 * MiB)), device_error);
}

}  // namespace
}  // namespace tandem::memory
