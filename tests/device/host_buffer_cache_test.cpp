// host_buffer_cache: a buffer given back serves the next request of its size; the cache never
// holds more than was once in use; buffers may outlive it; many threads take and give back.

#include "tandem/device/host_buffer_cache.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "tandem/device/cpu_backend.hpp"

namespace tandem::device {
namespace {

TEST(HostBufferCache, ABufferGivenBackServesTheNextRequestOfItsSize) {
  cpu_backend backend;
  host_buffer_cache cache(backend);
  std::byte* first = nullptr;
  {
    auto buffer = cache.take(10'000);
    ASSERT_GE(buffer->size(), 10'000u);
    first = buffer->data();
    std::memset(buffer->data(), 7, 10'000);
  }
  EXPECT_EQ(cache.statistics().in_use_bytes, 0u);
  EXPECT_GT(cache.statistics().kept_bytes, 0u);
  const auto again = cache.take(10'000);
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(cache.statistics().reused, 1u);
  // Another size is another buffer.
  const auto other = cache.take(20'000);
  EXPECT_NE(other->data(), first);
  EXPECT_EQ(cache.statistics().reused, 1u);
  EXPECT_EQ(cache.statistics().taken, 3u);
}

TEST(HostBufferCache, KeepsNoMoreThanWasEverInUseAtOnce) {
  cpu_backend backend;
  host_buffer_cache cache(backend);
  {
    // Two of 8 KiB at once: the most in use is 16 KiB.
    auto a = cache.take(8192);
    auto b = cache.take(8192);
  }
  EXPECT_EQ(cache.statistics().kept_bytes, 16384u);
  {
    // A 16 KiB request finds no buffer of its size: with it in use, keeping the two 8 KiB
    // ones would hold 32 KiB, twice what was ever in use together before it.
    auto c = cache.take(16384);
    EXPECT_EQ(cache.statistics().in_use_bytes, 16384u);
  }
  const auto after = cache.statistics();
  EXPECT_LE(after.kept_bytes + after.in_use_bytes, after.most_in_use_bytes);
  EXPECT_EQ(after.most_in_use_bytes, 16384u);
}

TEST(HostBufferCache, ABufferMayOutliveTheCache) {
  cpu_backend backend;
  std::unique_ptr<host_buffer> kept;
  {
    host_buffer_cache cache(backend);
    kept = cache.take(4096);
    auto idle = cache.take(4096);
  }
  std::memset(kept->data(), 1, 4096);  // still valid; freed below, after the cache
  kept.reset();
}

TEST(HostBufferCache, ThreadsTakeAndGiveBackConcurrently) {
  cpu_backend backend;
  host_buffer_cache cache(backend);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto buffer = cache.take(static_cast<std::size_t>(4096 * (1 + (i + t) % 3)));
        buffer->data()[0] = std::byte{1};
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto stats = cache.statistics();
  EXPECT_EQ(stats.taken, 800u);
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_GT(stats.reused, 0u);
  EXPECT_LE(stats.kept_bytes, stats.most_in_use_bytes);
}

}  // namespace
}  // namespace tandem::device
