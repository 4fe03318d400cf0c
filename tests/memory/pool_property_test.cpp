// Randomized property tests of the pool: many jobs and streams allocating and freeing random
// sizes under random budget changes, with the invariants checked after every step.
// Seeded, so a failure names the seed that reproduces it. TANDEM_PROPERTY_STEPS makes runs longer.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "pool_fixture.hpp"

namespace tandem::memory {
namespace {

std::size_t steps_from_env(std::size_t fallback) {
  if (const char* text = std::getenv("TANDEM_PROPERTY_STEPS"))
    return std::strtoull(text, nullptr, 10);
  return fallback;
}

/// Live blocks by address; detects any overlap as blocks come and go.
class live_set {
 public:
  ::testing::AssertionResult insert(const void* ptr, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    const auto at = reinterpret_cast<std::uintptr_t>(ptr);
    auto next = blocks_.lower_bound(at);
    if (next != blocks_.end() && next->first < at + bytes) {
      return ::testing::AssertionFailure() << "block at " << at << " overlaps the next live block";
    }
    if (next != blocks_.begin() && std::prev(next)->first + std::prev(next)->second > at) {
      return ::testing::AssertionFailure() << "block at " << at << " overlaps the previous one";
    }
    blocks_.emplace(at, bytes);
    return ::testing::AssertionSuccess();
  }
  void erase(const void* ptr) {
    std::lock_guard lock(mutex_);
    blocks_.erase(reinterpret_cast<std::uintptr_t>(ptr));
  }

 private:
  std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> blocks_;
};

struct held_block {
  void* ptr;
  std::size_t rounded;
};

std::size_t random_size(std::mt19937_64& random) {
  // Log-uniform from 1 B to 6 MiB: many small temporaries, some multi-region tensors.
  std::uniform_real_distribution<double> exponent(0.0, 22.6);
  return static_cast<std::size_t>(std::exp2(exponent(random)));
}

void check_invariants(const device_pool& pool, const std::vector<job_id>& jobs,
                      const std::vector<std::vector<held_block>>& held,
                      std::size_t& previous_reserved, std::uint64_t seed, std::size_t step) {
  SCOPED_TRACE("seed " + std::to_string(seed) + ", step " + std::to_string(step));
  const auto system = pool.stats();
  std::size_t live = 0;
  std::size_t reserved = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const auto s = pool.stats(jobs[j]);
    std::size_t by_kind = 0;
    for (const auto& k : s.by_kind) by_kind += k.live_bytes;
    std::size_t expected = 0;
    for (const auto& b : held[j]) expected += b.rounded;
    ASSERT_EQ(s.live_bytes, expected) << "job " << j << " live bytes disagree with its blocks";
    ASSERT_EQ(by_kind, s.live_bytes) << "per-kind live bytes do not add up";
    ASSERT_LE(s.live_bytes, s.reserved_bytes) << "job " << j << " has more live than reserved";
    ASSERT_EQ(s.reserved_bytes % system.region_size, 0u);
    live += s.live_bytes;
    reserved += s.reserved_bytes;
  }
  ASSERT_EQ(system.live_bytes, live);
  ASSERT_EQ(system.reserved_bytes, reserved);
  ASSERT_EQ(system.reserved_bytes + system.free_regions * system.region_size, system.capacity);
  // The budget is hard: holdings exceed it only after it was lowered, and then never grow.
  if (system.reserved_bytes > system.budget) {
    ASSERT_LE(system.reserved_bytes, previous_reserved);
  }
  previous_reserved = system.reserved_bytes;
}

void run_sequential(std::uint64_t seed, std::size_t steps) {
  std::mt19937_64 random(seed);
  device::cpu_backend backend;
  const std::size_t job_count = 2 + random() % 3;
  // Streams before the pool: the pool must go first, as it may still record on them.
  std::vector<std::vector<std::unique_ptr<device::stream>>> streams(job_count);
  device_pool pool(backend, testing::small_pool(48 * MiB, 32 * MiB));
  pool.set_diagnostic_handler([](const std::string& m) { FAIL() << "unexpected report: " << m; });
  std::vector<job_id> jobs;
  std::vector<std::vector<held_block>> held(job_count);
  for (std::size_t j = 0; j < job_count; ++j) {
    jobs.push_back(pool.add_job("job" + std::to_string(j)));
    for (std::size_t s = 0; s < 1 + random() % 2; ++s) {
      streams[j].push_back(backend.create_stream("s", device::stream_kind::compute));
    }
  }
  live_set overlaps;
  std::size_t previous_reserved = 0;
  std::size_t ooms = 0;
  for (std::size_t step = 0; step < steps; ++step) {
    const std::size_t j = random() % job_count;
    auto& stream = *streams[j][random() % streams[j].size()];
    const auto action = random() % 100;
    if (action < 50) {
      const auto bytes = random_size(random);
      const auto kind = all_alloc_kinds[random() % alloc_kind_count];
      try {
        void* ptr = pool.allocate(jobs[j], stream, bytes, kind);
        const auto rounded = align_up(bytes, pool.options().granularity);
        ASSERT_TRUE(overlaps.insert(ptr, rounded)) << "seed " << seed << ", step " << step;
        held[j].push_back({ptr, rounded});
      } catch (const out_of_memory_error&) {
        ++ooms;
      }
    } else if (action < 90 && !held[j].empty()) {
      const auto pick = random() % held[j].size();
      if (random() % 8 == 0) {  // used on another stream of the job as well
        pool.record_stream(jobs[j], held[j][pick].ptr, *streams[j][random() % streams[j].size()]);
      }
      overlaps.erase(held[j][pick].ptr);
      ASSERT_EQ(pool.deallocate(jobs[j], held[j][pick].ptr), free_status::ok);
      held[j][pick] = held[j].back();
      held[j].pop_back();
    } else if (action < 94) {
      // Device work makes later frees pending for a while.
      stream.launch_host([] { std::this_thread::sleep_for(std::chrono::microseconds(30)); });
    } else if (action < 96) {
      pool.set_budget(2 * MiB * (1 + random() % 24));
    } else if (action < 98) {
      pool.poll(jobs[j]);
    } else {
      pool.synchronize(jobs[j]);
    }
    check_invariants(pool, jobs, held, previous_reserved, seed, step);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_LT(ooms, steps / 2) << "the run should mostly allocate, not fail";
}

TEST(PoolProperty, InvariantsHoldUnderRandomOperations) {
  const std::size_t steps = steps_from_env(4000);
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    run_sequential(seed, steps);
    if (HasFatalFailure()) return;
  }
}

TEST(PoolProperty, ConcurrentJobsNeverShareLiveMemory) {
  const std::size_t steps = steps_from_env(4000);
  device::cpu_backend backend;
  device_pool pool(backend, testing::small_pool(48 * MiB, 40 * MiB));
  live_set overlaps;
  std::atomic<bool> overlap_found{false};
  std::vector<std::thread> threads;
  std::vector<job_id> jobs;
  for (int j = 0; j < 4; ++j) jobs.push_back(pool.add_job("job" + std::to_string(j)));
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    threads.emplace_back([&, j] {
      std::mt19937_64 random(100 + j);
      auto a = backend.create_stream("a", device::stream_kind::compute);
      auto b = backend.create_stream("b", device::stream_kind::compute);
      std::vector<held_block> mine;
      for (std::size_t step = 0; step < steps; ++step) {
        auto& stream = random() % 2 ? *a : *b;
        if (random() % 2 == 0 || mine.empty()) {
          try {
            const auto bytes = random_size(random) / 4 + 1;
            void* ptr = pool.allocate(jobs[j], stream, bytes);
            if (!overlaps.insert(ptr, align_up(bytes, 512))) overlap_found = true;
            mine.push_back({ptr, align_up(bytes, 512)});
          } catch (const out_of_memory_error&) {
          }
        } else {
          const auto pick = random() % mine.size();
          overlaps.erase(mine[pick].ptr);
          pool.deallocate(jobs[j], mine[pick].ptr);
          mine[pick] = mine.back();
          mine.pop_back();
        }
        if (random() % 64 == 0) stream.launch_host([] { std::this_thread::yield(); });
      }
      for (const auto& block : mine) {
        overlaps.erase(block.ptr);
        pool.deallocate(jobs[j], block.ptr);
      }
      a->synchronize();
      b->synchronize();
      pool.detach_stream(jobs[j], *a);
      pool.detach_stream(jobs[j], *b);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(overlap_found.load());
  const auto system = pool.stats();
  EXPECT_EQ(system.live_bytes, 0u);
  EXPECT_EQ(system.reserved_bytes, 0u) << "every region comes back once all is freed and synced";
  EXPECT_LE(system.peak_reserved_bytes, 40 * MiB);
}

}  // namespace
}  // namespace tandem::memory
