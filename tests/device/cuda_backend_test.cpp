// CUDA backend tests. Without a device they skip, saying why, except the one that checks how a
// missing device is reported; scripts/gpu-check.sh runs them on a GPU machine.

#include "tandem/device/cuda_backend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"

namespace tandem::device {
namespace {

/// Every test but the availability one needs a device; the fixture holds a backend when there is
/// one and the reason when not, so that all tests share the suite name CudaBackend.
class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_backend::available(&why_)) backend_ = std::make_unique<cuda_backend>();
  }

  std::string why_;
  std::unique_ptr<cuda_backend> backend_;
};

#define TANDEM_NEED_CUDA_DEVICE()        \
  do {                                   \
    if (!backend_) GTEST_SKIP() << why_; \
  } while (false)

/// Hands out host functions that block their stream until open(), to hold work back
/// deterministically. They sleep rather than spin (CUDA runs host functions on its own thread),
/// and destroying the gate opens it, so that a failed test cannot leave a stream blocked forever.
class gate {
 public:
  gate() = default;
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;
  ~gate() { open(); }

  std::function<void()> closed() const {
    return [open = open_] {
      while (!open->load(std::memory_order_acquire)) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    };
  }
  void open() { open_->store(true, std::memory_order_release); }

 private:
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(false);
};

/// Index of the first byte of [data, data + bytes) that differs from `value`, or `bytes`.
std::size_t first_mismatch(const std::byte* data, std::size_t bytes, std::byte value) {
  for (std::size_t i = 0; i < bytes; ++i) {
    if (data[i] != value) return i;
  }
  return bytes;
}

std::byte pattern(std::size_t i) {
  return static_cast<std::byte>((i * 7 + i / 4096) % 251);
}

TEST_F(CudaBackend, AvailabilityIsAnsweredAndAMissingDeviceIsExplained) {
  std::string why;
  if (cuda_backend::available(&why)) {
    cuda_backend backend;
    EXPECT_EQ(backend.describe().rfind("cuda:0 ", 0), 0u) << backend.describe();
    return;
  }
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
  try {
    cuda_backend backend;
    FAIL() << "constructed a CUDA backend without a device: " << backend.describe();
  } catch (const device_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CUDA"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << message;
  }
}

TEST_F(CudaBackend, DescribesTheDevice) {
  TANDEM_NEED_CUDA_DEVICE();
  EXPECT_EQ(backend_->kind(), backend_kind::cuda);
  EXPECT_GT(backend_->total_memory(), 0u);
  const std::string text = backend_->describe();
  EXPECT_EQ(text.rfind("cuda:0 ", 0), 0u) << text;
  EXPECT_NE(text.find(format_bytes(backend_->total_memory())), std::string::npos) << text;
}

TEST_F(CudaBackend, RejectsADeviceThatDoesNotExist) {
  TANDEM_NEED_CUDA_DEVICE();
  for (const int device : {-1, 1000}) {
    try {
      cuda_backend backend(cuda_backend_options{.device = device});
      FAIL() << "constructed a backend for CUDA device " << device;
    } catch (const device_error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA device " + std::to_string(device)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CudaBackend, ReservesAndReleasesDeviceMemory) {
  TANDEM_NEED_CUDA_DEVICE();
  EXPECT_THROW(static_cast<void>(backend_->reserve(0)), usage_error);
  const std::size_t bytes = 64 * MiB;
  for (int round = 0; round < 3; ++round) {  // released memory can be reserved again
    auto memory = backend_->reserve(bytes);
    ASSERT_NE(memory->base(), nullptr);
    EXPECT_EQ(memory->size(), bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(memory->base()) % 256, 0u);
    EXPECT_TRUE(memory->contains(memory->base() + bytes - 1));
    EXPECT_FALSE(memory->contains(memory->base() + bytes));
  }
  // Two live reservations do not overlap.
  auto first = backend_->reserve(bytes);
  auto second = backend_->reserve(bytes);
  EXPECT_FALSE(first->contains(second->base()));
  EXPECT_FALSE(second->contains(first->base()));
}

TEST_F(CudaBackend, ReservingMoreThanTheDeviceHasNamesTheSize) {
  TANDEM_NEED_CUDA_DEVICE();
  const std::size_t too_much = backend_->total_memory() * 2;
  try {
    auto memory = backend_->reserve(too_much);
    FAIL() << "reserved twice the device's memory";
  } catch (const device_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(format_bytes(too_much)), std::string::npos) << message;
    EXPECT_NE(message.find("cudaMalloc"), std::string::npos) << message;
  }
  // The failure is not sticky: the device still serves reservations.
  EXPECT_NO_THROW(static_cast<void>(backend_->reserve(MiB)));
}

TEST_F(CudaBackend, StreamIdsAreDenseAndReused) {
  TANDEM_NEED_CUDA_DEVICE();
  auto a = backend_->create_stream("a", stream_kind::compute);
  auto b = backend_->create_stream("b", stream_kind::copy);
  auto c = backend_->create_stream("c", stream_kind::compute);
  EXPECT_EQ(a->id(), 0u);
  EXPECT_EQ(b->id(), 1u);
  EXPECT_EQ(c->id(), 2u);
  EXPECT_EQ(b->name(), "b");
  EXPECT_EQ(b->kind(), stream_kind::copy);
  b.reset();
  auto d = backend_->create_stream("d", stream_kind::compute);
  EXPECT_EQ(d->id(), 1u);
}

TEST_F(CudaBackend, EventsCompleteAfterTheWorkBeforeThem) {
  TANDEM_NEED_CUDA_DEVICE();
  auto stream = backend_->create_stream("s", stream_kind::compute);
  EXPECT_NO_THROW(stream->record()->synchronize());  // an idle stream's event completes at once

  gate held;
  stream->launch_host(held.closed());
  auto done = stream->record();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(done->query()) << "the event completed before the work enqueued before it";
  held.open();
  done->synchronize();
  EXPECT_TRUE(done->query());
  stream->synchronize();
}

TEST_F(CudaBackend, MemsetAndCopiesRoundTripThroughPinnedMemory) {
  TANDEM_NEED_CUDA_DEVICE();
  const std::size_t bytes = 8 * MiB;
  auto memory = backend_->reserve(2 * bytes);
  auto source = backend_->allocate_host(bytes);
  auto result = backend_->allocate_host(bytes);
  ASSERT_GE(source->size(), bytes);
  for (std::size_t i = 0; i < bytes; ++i) source->data()[i] = pattern(i);

  for (const auto kind : {stream_kind::compute, stream_kind::copy}) {
    auto stream = backend_->create_stream("round-trip", kind);
    std::byte* upload = memory->base();
    std::byte* moved = memory->base() + bytes;
    stream->copy_async(upload, source->data(), bytes);  // host -> device
    stream->memset_async(upload + MiB, 0x5a, MiB);      // overwrite the second MiB
    stream->copy_async(moved, upload, bytes);           // device -> device
    stream->copy_async(result->data(), moved, bytes);   // device -> host
    stream->synchronize();

    std::size_t wrong = 0;
    for (std::size_t i = 0; i < bytes; ++i) {
      const bool overwritten = i >= MiB && i < 2 * MiB;
      if (result->data()[i] != (overwritten ? std::byte{0x5a} : pattern(i))) ++wrong;
    }
    EXPECT_EQ(wrong, 0u) << "bytes differ after the round trip on a "
                         << (kind == stream_kind::copy ? "copy" : "compute") << " stream";
    std::fill_n(result->data(), bytes, std::byte{0});
  }
}

TEST_F(CudaBackend, WaitOrdersWorkAcrossStreams) {
  TANDEM_NEED_CUDA_DEVICE();
  const std::size_t bytes = 64 * MiB;
  auto memory = backend_->reserve(2 * bytes);
  auto host = backend_->allocate_host(2 * MiB);
  auto a = backend_->create_stream("a", stream_kind::compute);
  auto b = backend_->create_stream("b", stream_kind::copy);
  std::byte* shared = memory->base();
  a->memset_async(shared, 0, bytes);
  a->synchronize();

  // a is held back by a closed gate, then fills `shared` with 0x11 and reads it in a long copy.
  gate held;
  a->launch_host(held.closed());
  a->memset_async(shared, 0x11, bytes);
  a->copy_async(memory->base() + bytes, shared, bytes);
  // b overwrites the first MiB and reads back two: only correct after all of a's work so far.
  // The event is dropped straight after wait(): CUDA captured it at the call.
  b->wait(a->record());
  b->memset_async(shared, 0x22, MiB);
  b->copy_async(host->data(), shared, 2 * MiB);
  auto b_done = b->record();

  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(b_done->query()) << "b ran although a, which it waits for, is held back";
  held.open();
  b->synchronize();
  EXPECT_EQ(first_mismatch(host->data(), MiB, std::byte{0x22}), MiB);
  EXPECT_EQ(first_mismatch(host->data() + MiB, MiB, std::byte{0x11}), MiB)
      << "b read the region before a's memset had filled it";
  a->synchronize();
}

TEST_F(CudaBackend, WaitRejectsEventsItCannotUse) {
  TANDEM_NEED_CUDA_DEVICE();
  auto stream = backend_->create_stream("s", stream_kind::compute);
  EXPECT_THROW(stream->wait(nullptr), usage_error);
  cpu_backend cpu;
  auto cpu_stream = cpu.create_stream("cpu", stream_kind::compute);
  EXPECT_THROW(stream->wait(cpu_stream->record()), usage_error);
}

TEST_F(CudaBackend, HostFunctionsRunInOrderAndTheirErrorsAreRethrown) {
  TANDEM_NEED_CUDA_DEVICE();
  auto memory = backend_->reserve(MiB);
  auto host = backend_->allocate_host(MiB);
  auto stream = backend_->create_stream("s", stream_kind::compute);
  std::vector<int> order;
  std::byte seen{0};
  stream->memset_async(memory->base(), 0x7e, MiB);
  stream->copy_async(host->data(), memory->base(), MiB);
  stream->launch_host([&] {
    seen = host->data()[MiB - 1];  // runs after the copy before it
    order.push_back(1);
  });
  stream->launch_host([] { throw std::runtime_error("host function failed"); });
  stream->launch_host([&] { order.push_back(2); });  // later work still runs
  try {
    stream->synchronize();
    FAIL() << "synchronize() did not rethrow the host function's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "host function failed");
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(seen, std::byte{0x7e});
  EXPECT_THROW(stream->launch_host({}), usage_error);
  // The error is reported once; the stream keeps working.
  stream->launch_host([&] { order.push_back(3); });
  EXPECT_NO_THROW(stream->synchronize());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_F(CudaBackend, StreamsEventsAndMemoryOutliveTheBackend) {
  TANDEM_NEED_CUDA_DEVICE();
  auto memory = backend_->reserve(MiB);
  auto host = backend_->allocate_host(MiB);
  auto stream = backend_->create_stream("s", stream_kind::compute);
  backend_.reset();
  stream->memset_async(memory->base(), 0x33, MiB);
  stream->copy_async(host->data(), memory->base(), MiB);
  auto done = stream->record();
  stream.reset();  // the event outlives its stream too
  done->synchronize();
  EXPECT_EQ(first_mismatch(host->data(), MiB, std::byte{0x33}), MiB);
}

}  // namespace
}  // namespace tandem::device
