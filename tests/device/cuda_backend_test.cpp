// CUDA backend tests: they skip without a device and run on a GPU machine (scripts/gpu-check.sh).

#include "tandem/device/cuda_backend.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::device {
namespace {

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_backend::available(&why)) GTEST_SKIP() << why;
    backend_ = std::make_unique<cuda_backend>();
  }
  std::unique_ptr<cuda_backend> backend_;
};

TEST(CudaAvailability, AnswersWithoutThrowingAndExplainsAMissingDevice) {
  std::string why;
  const bool available = cuda_backend::available(&why);
  if (available) {
    EXPECT_NO_THROW(cuda_backend{});
    return;
  }
  EXPECT_FALSE(why.empty());
  try {
    cuda_backend backend;
    FAIL() << "constructed a CUDA backend without a device";
  } catch (const device_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
}

TEST_F(CudaBackend, DescribesTheDevice) {
  EXPECT_NE(backend_->describe().find("cuda:0"), std::string::npos);
  EXPECT_GT(backend_->total_memory(), 0u);
}

TEST_F(CudaBackend, MemsetAndCopiesRoundTripThroughPinnedMemory) {
  auto memory = backend_->reserve(8 * MiB);
  auto host = backend_->allocate_host(8 * MiB);
  auto stream = backend_->create_stream("s", stream_kind::compute);
  stream->memset_async(memory->base(), 0x3c, 8 * MiB);
  stream->copy_async(host->data(), memory->base(), 8 * MiB);
  stream->synchronize();
  for (std::size_t i = 0; i < 8 * MiB; i += 65537) EXPECT_EQ(host->data()[i], std::byte{0x3c});
}

TEST_F(CudaBackend, WaitOrdersWorkAcrossStreams) {
  constexpr std::size_t bytes = 256 * MiB;
  auto memory = backend_->reserve(2 * bytes);
  auto host = backend_->allocate_host(MiB);
  auto a = backend_->create_stream("a", stream_kind::compute);
  auto b = backend_->create_stream("b", stream_kind::compute);
  a->memset_async(memory->base() + bytes, 0x11, bytes);
  a->copy_async(memory->base(), memory->base() + bytes, bytes);  // long: b must wait for it
  b->wait(a->record());
  b->memset_async(memory->base(), 0x22, MiB);
  b->copy_async(host->data(), memory->base(), MiB);
  b->synchronize();
  EXPECT_EQ(host->data()[0], std::byte{0x22}) << "b's memset ran before a's copy finished";
  a->synchronize();
}

TEST_F(CudaBackend, EventsCompleteAfterTheWorkBeforeThem) {
  auto stream = backend_->create_stream("s", stream_kind::compute);
  std::atomic<bool> release{false};
  stream->launch_host([&] {
    while (!release.load()) {
    }
  });
  auto done = stream->record();
  EXPECT_FALSE(done->query());
  release = true;
  done->synchronize();
  EXPECT_TRUE(done->query());
}

TEST_F(CudaBackend, HostFunctionsRunInOrderAndTheirErrorsAreRethrown) {
  auto stream = backend_->create_stream("s", stream_kind::compute);
  std::vector<int> order;
  stream->launch_host([&] { order.push_back(1); });
  stream->launch_host([] { throw std::runtime_error("host function failed"); });
  stream->launch_host([&] { order.push_back(2); });
  EXPECT_THROW(stream->synchronize(), std::runtime_error);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST_F(CudaBackend, ReservingMoreThanTheDeviceHasNamesTheSize) {
  try {
    auto too_much = backend_->reserve(backend_->total_memory() * 2);
    FAIL() << "reserved twice the device's memory";
  } catch (const device_error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::device
