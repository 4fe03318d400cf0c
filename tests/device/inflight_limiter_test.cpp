// Zico's in-flight limit on the CPU backend's streams, whose work can be held back at will: the
// host may run `limit` marks ahead of the stream and no further.

#include "tandem/device/inflight_limiter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "tandem/common/error.hpp"
#include "tandem/device/cpu_backend.hpp"

namespace tandem::device {
namespace {

TEST(InflightLimiter, TheHostRunsAtMostLimitMarksAheadOfTheStream) {
  cpu_backend backend;
  auto queue = backend.create_stream("job", stream_kind::compute);
  std::promise<void> release;
  queue->launch_host([held = release.get_future().share()] { held.wait(); });  // stream stalls

  inflight_limiter limiter(4);
  std::atomic<int> marked{0};
  std::thread host([&] {
    for (int op = 0; op < 8; ++op) {
      static_cast<void>(limiter.mark(*queue));
      queue->launch_host([] {});  // the operation itself
      marked.fetch_add(1);
    }
  });
  // The first four marks pass; the fifth waits for the first, which waits for the stalled stream.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (marked.load() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(marked.load(), 4);
  EXPECT_EQ(limiter.pending(), 5u);
  release.set_value();
  host.join();
  EXPECT_EQ(marked.load(), 8);
  EXPECT_GE(limiter.waits(), 1);
  queue->synchronize();
  EXPECT_FALSE(limiter.mark(*queue));  // everything done: no wait
  EXPECT_EQ(limiter.pending(), 1u);    // completed marks were dropped
}

TEST(InflightLimiter, ALimitBelowOneIsRefused) {
  EXPECT_THROW(inflight_limiter(0), usage_error);
}

}  // namespace
}  // namespace tandem::device
