#include "tandem/device/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::device {
namespace {

using namespace std::chrono_literals;

TEST(CpuBackend, ReservesWithinItsLimitAndReleases) {
  cpu_backend backend({.memory_limit = 64 * MiB});
  auto first = backend.reserve(48 * MiB);
  EXPECT_EQ(first->size(), 48 * MiB);
  first->base()[0] = std::byte{1};
  first->base()[48 * MiB - 1] = std::byte{2};
  EXPECT_TRUE(first->contains(first->base() + 10));
  EXPECT_FALSE(first->contains(first->base() + 48 * MiB));
  try {
    auto second = backend.reserve(32 * MiB);
    FAIL() << "reserved past the limit";
  } catch (const device_error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_limit"), std::string::npos) << e.what();
  }
  first.reset();
  EXPECT_NO_THROW(auto again = backend.reserve(64 * MiB));
}

TEST(CpuBackend, WorkRunsLaterAndInOrder) {
  cpu_backend backend;
  auto stream = backend.create_stream("s", stream_kind::compute);
  std::atomic<bool> release{false};
  std::vector<int> order;
  stream->launch_host([&] {
    while (!release.load()) std::this_thread::sleep_for(100us);
    order.push_back(1);
  });
  stream->launch_host([&] { order.push_back(2); });
  auto done = stream->record();
  EXPECT_FALSE(done->query()) << "work ran before it was released: not asynchronous";
  release = true;
  done->synchronize();
  EXPECT_TRUE(done->query());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(CpuBackend, AnEventCoversOnlyWorkBeforeIt) {
  cpu_backend backend;
  auto stream = backend.create_stream("s", stream_kind::compute);
  auto empty = stream->record();
  EXPECT_TRUE(empty->query()) << "an event on an idle stream is complete";
  std::atomic<bool> release{false};
  stream->launch_host([&] {
    while (!release.load()) std::this_thread::sleep_for(100us);
  });
  auto after = stream->record();
  EXPECT_FALSE(after->query());
  release = true;
  stream->synchronize();
  EXPECT_TRUE(after->query());
}

TEST(CpuBackend, WaitOrdersWorkAcrossStreams) {
  cpu_backend backend;
  auto producer = backend.create_stream("producer", stream_kind::compute);
  auto consumer = backend.create_stream("consumer", stream_kind::compute);
  std::atomic<int> value{0};
  producer->launch_host([&] {
    std::this_thread::sleep_for(20ms);
    value = 42;
  });
  consumer->wait(producer->record());
  int seen = -1;
  consumer->launch_host([&] { seen = value.load(); });
  consumer->synchronize();
  EXPECT_EQ(seen, 42);
}

TEST(CpuBackend, MemsetAndCopiesRoundTrip) {
  cpu_backend backend;
  auto memory = backend.reserve(4 * MiB);
  auto host = backend.allocate_host(MiB);
  auto stream = backend.create_stream("s", stream_kind::compute);
  stream->memset_async(memory->base(), 0x7e, MiB);
  stream->copy_async(host->data(), memory->base(), MiB);
  stream->synchronize();
  for (std::size_t i = 0; i < MiB; i += 4099) EXPECT_EQ(host->data()[i], std::byte{0x7e});
}

TEST(CpuBackend, CopyStreamsHonourTheBandwidth) {
  cpu_backend backend({.copy_bandwidth = 100.0 * static_cast<double>(MiB)});  // 100 MiB/s
  auto memory = backend.reserve(4 * MiB);
  auto host = backend.allocate_host(4 * MiB);
  auto copy = backend.create_stream("copy", stream_kind::copy);
  const auto start = std::chrono::steady_clock::now();
  copy->copy_async(host->data(), memory->base(), 4 * MiB);  // 40 ms at 100 MiB/s
  copy->synchronize();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 39ms);
}

TEST(CpuBackend, SynchronizeRethrowsAWorkItemsError) {
  cpu_backend backend;
  auto stream = backend.create_stream("s", stream_kind::compute);
  stream->launch_host([] { throw std::runtime_error("kernel failed"); });
  int after = 0;
  stream->launch_host([&] { after = 1; });
  EXPECT_THROW(stream->synchronize(), std::runtime_error);
  EXPECT_EQ(after, 1) << "the stream keeps executing after a failed item";
  EXPECT_NO_THROW(stream->synchronize()) << "the error is reported once";
}

TEST(CpuBackend, StreamIdsAreDenseAndReused) {
  cpu_backend backend;
  auto a = backend.create_stream("a", stream_kind::compute);
  auto b = backend.create_stream("b", stream_kind::copy);
  EXPECT_EQ(a->id(), 0u);
  EXPECT_EQ(b->id(), 1u);
  EXPECT_EQ(b->kind(), stream_kind::copy);
  a.reset();
  auto c = backend.create_stream("c", stream_kind::compute);
  EXPECT_EQ(c->id(), 0u);
}

TEST(CpuBackend, EventsOutliveTheirStream) {
  cpu_backend backend;
  event_ptr done;
  {
    auto stream = backend.create_stream("s", stream_kind::compute);
    stream->launch_host([] { std::this_thread::sleep_for(5ms); });
    done = stream->record();
  }  // destroying the stream drains it
  EXPECT_TRUE(done->query());
  done->synchronize();
}

}  // namespace
}  // namespace tandem::device
