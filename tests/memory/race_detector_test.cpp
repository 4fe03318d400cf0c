// A race detector that cannot be fooled: every allocation's "kernels" run on the CPU backend's
// stream threads, later than the host enqueued them. The first kernel writes a pattern tied to
// (job, allocation) into the block, the last one checks it is still there. If the allocator
// handed the block to another stream or job while those kernels were pending, the other user's
// pattern breaks the check.
//
// Built twice: against the real pool (no violation allowed) and against a copy compiled with
// TANDEM_TEST_SKIP_EVENT_WAIT, which forgets to wait for the device (violations required).

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "pool_fixture.hpp"

namespace tandem::memory {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t stride = 64;  // one checked word per cache line keeps kernels short

struct detector {
  std::atomic<std::uint64_t> violations{0};
  std::atomic<std::uint64_t> checks{0};

  static void write(void* block, std::size_t bytes, std::uint64_t tag) {
    auto* bytes_ptr = static_cast<std::byte*>(block);
    for (std::size_t at = 0; at + sizeof tag <= bytes; at += stride) {
      std::memcpy(bytes_ptr + at, &tag, sizeof tag);
    }
  }
  void check(const void* block, std::size_t bytes, std::uint64_t tag) {
    const auto* bytes_ptr = static_cast<const std::byte*>(block);
    for (std::size_t at = 0; at + sizeof tag <= bytes; at += stride) {
      std::uint64_t seen = 0;
      std::memcpy(&seen, bytes_ptr + at, sizeof seen);
      if (seen != tag) {
        violations.fetch_add(1);
        return;
      }
    }
    checks.fetch_add(1);
  }
};

struct run_result {
  std::uint64_t violations = 0;
  std::uint64_t checks = 0;
  std::uint64_t regions_moved = 0;
  std::uint64_t reuses = 0;
};

run_result run_detector(std::size_t jobs, std::size_t operations, std::uint64_t seed) {
  device::cpu_backend backend;
  auto options = testing::small_pool(32 * MiB, 12 * MiB);
  options.event_granularity = 2 * MiB;
  device_pool pool(backend, options);
  detector found;
  std::vector<std::thread> threads;
  std::vector<job_id> ids;
  for (std::size_t j = 0; j < jobs; ++j) ids.push_back(pool.add_job("job" + std::to_string(j)));

  for (std::size_t j = 0; j < jobs; ++j) {
    threads.emplace_back([&, j] {
      std::mt19937_64 random(seed + j);
      std::vector<std::unique_ptr<device::stream>> streams;
      streams.push_back(
          backend.create_stream("c" + std::to_string(j), device::stream_kind::compute));
      streams.push_back(backend.create_stream("x" + std::to_string(j), device::stream_kind::copy));
      for (std::size_t op = 0; op < operations; ++op) {
        auto& stream = *streams[random() % streams.size()];
        const std::size_t bytes = 4 * KiB + random() % (1536 * KiB);
        void* block = nullptr;
        try {
          block = pool.allocate(ids[j], stream, bytes, alloc_kind::feature_map);
        } catch (const out_of_memory_error&) {
          std::this_thread::sleep_for(200us);
          continue;
        }
        const std::uint64_t tag = (std::uint64_t{j + 1} << 48) | op;
        const auto hold = std::chrono::microseconds(random() % 400);
        stream.launch_host([block, bytes, tag] { detector::write(block, bytes, tag); });
        stream.launch_host([hold] { std::this_thread::sleep_for(hold); });
        stream.launch_host([&found, block, bytes, tag] { found.check(block, bytes, tag); });
        pool.deallocate(ids[j], block);  // host-side free: the kernels above are still pending
      }
      for (auto& stream : streams) {
        stream->synchronize();
        pool.detach_stream(ids[j], *stream);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  run_result result{found.violations.load(), found.checks.load(), 0, 0};
  for (auto id : ids) {
    const auto stats = pool.stats(id);
    result.regions_moved += stats.regions_returned;
    result.reuses += stats.same_stream_reuses + stats.synced_reuses;
  }
  return result;
}

#if !defined(TANDEM_EXPECT_BROKEN_ALLOCATOR)

TEST(RaceDetector, RealPoolNeverHandsOutMemoryThatPendingWorkUses) {
  const auto result = run_detector(4, 300, 11);
  EXPECT_EQ(result.violations, 0u) << result.checks << " checks passed";
  // The run must exercise what could go wrong: blocks reused and regions moving between jobs.
  EXPECT_GT(result.checks, 1000u);
  EXPECT_GT(result.reuses, 100u);
  EXPECT_GT(result.regions_moved, 10u);
}

#else

TEST(RaceDetector, CatchesAnAllocatorThatSkipsTheEventWait) {
  const auto result = run_detector(4, 300, 11);
  EXPECT_GT(result.violations, 0u)
      << "the detector missed a pool that reuses memory before the device is done with it ("
      << result.checks << " checks)";
}

#endif

}  // namespace
}  // namespace tandem::memory
