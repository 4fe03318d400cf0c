// Randomized property test of jobs that leave while some of their blocks are still alive
// (Note [Retired arenas]): those blocks keep their bytes, their late frees release nothing of
// another job, and the regions held never exceed the budget. Each block is filled with a pattern
// of its own and checked when it is freed, so a block handed to two owners shows up as a
// corrupted pattern. Seeded; TANDEM_PROPERTY_STEPS makes the run longer.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pool_fixture.hpp"

namespace tandem::memory {
namespace {

struct block {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  unsigned char pattern = 0;
};

bool intact(const block& b) {
  const auto* bytes = static_cast<const unsigned char*>(b.ptr);
  for (std::size_t i = 0; i < b.bytes; ++i) {
    if (bytes[i] != b.pattern) return false;
  }
  return true;
}

TEST(RetiredJobs, BlocksLeftBehindAreNeverHandedOnAndTheirFreesTouchNoOtherJob) {
  device::cpu_backend backend;
  auto stream = backend.create_stream("s", device::stream_kind::compute);
  const std::size_t budget = 24 * MiB;
  device_pool pool(backend, testing::small_pool(64 * MiB, budget));
  std::vector<std::string> warnings;
  pool.set_diagnostic_handler([&](const std::string& message) { warnings.push_back(message); });

  const char* text = std::getenv("TANDEM_PROPERTY_STEPS");
  const std::size_t steps = text != nullptr ? std::strtoull(text, nullptr, 10) : 4000;
  const std::uint64_t seed = 14;
  std::mt19937_64 random(seed);
  struct job {
    job_id id;
    std::vector<block> blocks;
  };
  std::vector<job> jobs;
  std::vector<block> orphans;  // blocks of jobs that left, still alive
  unsigned char next_pattern = 1;
  std::size_t left_behind = 0;

  for (std::size_t step = 0; step < steps; ++step) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", step " + std::to_string(step));
    const auto choice = random() % 100;
    if (jobs.size() < 2 || (choice < 5 && jobs.size() < 6)) {
      jobs.push_back({pool.add_job("j" + std::to_string(step)), {}});
    } else if (choice < 55) {
      auto& j = jobs[random() % jobs.size()];
      const std::size_t bytes = 1 + random() % (3 * MiB);
      try {
        block b{pool.allocate(j.id, *stream, bytes), bytes, next_pattern++};
        if (next_pattern == 0) next_pattern = 1;
        std::memset(b.ptr, b.pattern, b.bytes);
        j.blocks.push_back(b);
      } catch (const out_of_memory_error&) {
        // The budget is full: the next steps free or retire.
      }
    } else if (choice < 80) {
      auto& j = jobs[random() % jobs.size()];
      if (j.blocks.empty()) continue;
      const auto at = random() % j.blocks.size();
      ASSERT_TRUE(intact(j.blocks[at])) << "a live block was overwritten";
      ASSERT_EQ(pool.deallocate(j.id, j.blocks[at].ptr), free_status::ok);
      j.blocks.erase(j.blocks.begin() + static_cast<std::ptrdiff_t>(at));
    } else if (choice < 90 && !orphans.empty()) {
      // A late free: by the block's region owner, as libtorch's deleter finds it.
      const auto at = random() % orphans.size();
      const auto& b = orphans[at];
      ASSERT_TRUE(intact(b)) << "a block left behind was handed to another job";
      const auto owner = pool.owner_of(b.ptr);
      ASSERT_TRUE(owner.has_value());
      ASSERT_EQ(pool.deallocate(*owner, b.ptr), free_status::ok);
      orphans.erase(orphans.begin() + static_cast<std::ptrdiff_t>(at));
    } else {
      // A job leaves, some of its blocks still alive.
      const auto at = random() % jobs.size();
      auto& j = jobs[at];
      std::size_t alive = 0;
      for (const auto& b : j.blocks) {
        if (random() % 2 == 0) {
          ASSERT_EQ(pool.deallocate(j.id, b.ptr), free_status::ok);
        } else {
          orphans.push_back(b);
          alive += align_up(b.bytes, pool.options().granularity);
        }
      }
      ASSERT_EQ(pool.remove_job(j.id), alive);
      left_behind += alive > 0 ? 1 : 0;
      jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(at));
    }
    const auto stats = pool.stats();
    ASSERT_LE(stats.reserved_bytes, budget);
    ASSERT_EQ(stats.invalid_frees, 0u);
  }
  for (const auto& b : orphans) {
    ASSERT_TRUE(intact(b));
    ASSERT_EQ(pool.deallocate(*pool.owner_of(b.ptr), b.ptr), free_status::ok);
  }
  for (const auto& j : jobs) {
    for (const auto& b : j.blocks) ASSERT_TRUE(intact(b));
  }
  EXPECT_EQ(warnings.size(), left_behind) << "one warning per job that left blocks behind";
  EXPECT_GT(left_behind, 10u) << "the sequence should retire jobs with live blocks";
}

}  // namespace
}  // namespace tandem::memory
