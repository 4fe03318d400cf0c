// libtorch's CUDA tensors on the pool: attribution by stream (the autograd thread included),
// record_stream, the budget, and the errors for streams no job registered. Built only with a CUDA
// libtorch 2.x; without a device the tests skip, saying why, except those that need none.
// scripts/gpu-check.sh runs them on a GPU machine.

#include "tandem/torch/cuda_allocator.hpp"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/device/cuda_backend.hpp"
#include "tandem/torch/job_binding.hpp"

namespace tandem::torch_support {
namespace {

using memory::alloc_kind;

memory::pool_options pool_of(std::size_t capacity, std::size_t budget) {
  memory::pool_options options;
  options.capacity = capacity;
  options.budget = budget;
  options.region_size = 2 * MiB;
  options.small_threshold = 64 * KiB;
  return options;
}

/// Runs `work`, which must throw `Expected`, and returns the message. libtorch passes exceptions
/// from its allocator hooks through unchanged as far as we know; if it wraps them, the failure
/// says into what.
template <class Expected>
std::string message_of(const std::function<void()>& work, const char* expected_name) {
  try {
    work();
  } catch (const Expected& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << expected_name << ", libtorch raised: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected " << expected_name << ", nothing was thrown";
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Hands out host functions that hold their stream back until open(); destroying the gate opens
/// it, so that a failing test cannot leave a stream blocked.
class gate {
 public:
  gate() = default;
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;
  ~gate() { open(); }

  [[nodiscard]] std::function<void()> closed() const {
    return [is_open = open_] {
      while (!is_open->load(std::memory_order_acquire)) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    };
  }
  void open() { open_->store(true, std::memory_order_release); }

 private:
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(false);
};

/// A CUDA pool (budget 128 MiB) installed as libtorch's CUDA allocator, with jobs "a" and "b"
/// and their streams, when there is a device. The streams are made before the pool, so that they
/// outlive it, and libtorch's cached cuBLAS workspaces go back to their jobs before it goes.
class CudaAllocator : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!device::cuda_backend::available(&why)) GTEST_SKIP() << why;
    backend_ = std::make_unique<device::cuda_backend>();
    stream_a_ = backend_->create_stream("a", device::stream_kind::compute);
    stream_b_ = backend_->create_stream("b", device::stream_kind::compute);
    side_stream_a_ = backend_->create_stream("a-side", device::stream_kind::compute);
    pool_ = std::make_unique<memory::device_pool>(*backend_, pool_of(256 * MiB, 128 * MiB));
    job_a_ = pool_->add_job("a");
    job_b_ = pool_->add_job("b");
    installed_ = std::make_unique<cuda_allocator_scope>(*pool_);
  }

  void TearDown() override {
    if (installed_) release_cublas_workspaces();  // no job runs now
  }

  [[nodiscard]] torch::TensorOptions floats() const {
    return torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA, 0);
  }

  [[nodiscard]] std::size_t live(memory::job_id job) const { return pool_->stats(job).live_bytes; }

  std::unique_ptr<device::cuda_backend> backend_;
  std::unique_ptr<device::stream> stream_a_;
  std::unique_ptr<device::stream> stream_b_;
  std::unique_ptr<device::stream> side_stream_a_;
  std::unique_ptr<memory::device_pool> pool_;
  memory::job_id job_a_ = 0;
  memory::job_id job_b_ = 0;
  std::unique_ptr<cuda_allocator_scope> installed_;
};

TEST_F(CudaAllocator, TensorsOnAJobsStreamLandInThePoolUnderThatJob) {
  cuda_job_stream_binding bound(*pool_, job_a_, *stream_a_);
  EXPECT_EQ(bound.native_stream(), device::native_handle(*stream_a_));
  EXPECT_EQ(bound.device(), 0);
  const c10::cuda::CUDAStreamGuard on_job_stream(torch_stream(bound));
  EXPECT_EQ(c10::cuda::getCurrentCUDAStream().stream(), bound.native_stream());
  const auto before = live(job_a_);
  {
    auto ones = torch::ones({256, 1024}, floats());  // 1 MiB
    EXPECT_TRUE(pool_->owns(ones.data_ptr()));
    EXPECT_EQ(pool_->owner_of(ones.data_ptr()), job_a_);
    EXPECT_GE(live(job_a_), before + 1 * MiB);
    EXPECT_EQ(ones.sum().item<float>(), 256.0F * 1024.0F) << "kernels ran on the pool's memory";
  }
  EXPECT_EQ(live(job_a_), before) << "the tensors' memory went back to the job";
  EXPECT_EQ(live(job_b_), 0U);
}

TEST_F(CudaAllocator, TwoJobsOnTwoStreamsAreAttributedSeparately) {
  cuda_job_stream_binding bound_a(*pool_, job_a_, *stream_a_);
  cuda_job_stream_binding bound_b(*pool_, job_b_, *stream_b_);
  {
    // One thread, two streams: the stream decides, not the thread.
    torch::Tensor on_a;
    torch::Tensor on_b;
    {
      const c10::cuda::CUDAStreamGuard on_stream(torch_stream(bound_a));
      on_a = torch::zeros({256 * 1024}, floats());  // 1 MiB
    }
    {
      const c10::cuda::CUDAStreamGuard on_stream(torch_stream(bound_b));
      on_b = torch::zeros({3 * 256 * 1024}, floats());  // 3 MiB
    }
    EXPECT_EQ(pool_->owner_of(on_a.data_ptr()), job_a_);
    EXPECT_EQ(pool_->owner_of(on_b.data_ptr()), job_b_);
    EXPECT_EQ(live(job_a_), 1 * MiB);
    EXPECT_EQ(live(job_b_), 3 * MiB);
  }
  EXPECT_EQ(live(job_a_), 0U);
  EXPECT_EQ(live(job_b_), 0U);

  // Two threads at once, each on its job's stream.
  auto run = [&](const cuda_job_stream_binding& bound, std::int64_t elements) {
    const c10::cuda::CUDAStreamGuard on_stream(torch_stream(bound));
    for (int step = 0; step < 20; ++step) {
      auto x = torch::full({elements}, 2.0, floats());
      auto y = x * 3 + 1;
      EXPECT_EQ(pool_->owner_of(x.data_ptr()), bound.job());
      EXPECT_EQ(pool_->owner_of(y.data_ptr()), bound.job());
      EXPECT_EQ(y.max().item<float>(), 7.0F);
    }
  };
  std::thread a(run, std::cref(bound_a), 300 * 1024);
  std::thread b(run, std::cref(bound_b), 500 * 1024);
  a.join();
  b.join();
  EXPECT_EQ(live(job_a_), 0U);
  EXPECT_EQ(live(job_b_), 0U);
  EXPECT_GT(pool_->stats(job_a_).peak_live_bytes, 0U);
  EXPECT_GT(pool_->stats(job_b_).peak_live_bytes, 0U);
}

TEST_F(CudaAllocator, BackwardOnTheAutogradThreadAllocatesOnTheJobsStream) {
  cuda_job_stream_binding bound(*pool_, job_a_, *stream_a_);
  const c10::cuda::CUDAStreamGuard on_job_stream(torch_stream(bound));
  torch::manual_seed(0);
  torch::nn::Linear layer(64, 32);
  {
    // The job's thread tags its model as persistent through its job_binding.
    job_binding thread_of_job(*pool_, job_a_, *stream_a_);
    kind_scope persistent(alloc_kind::persistent);
    layer->to(torch::Device(torch::kCUDA, 0));
  }
  EXPECT_GE(pool_->stats(job_a_).by_kind[memory::index_of(alloc_kind::persistent)].live_bytes,
            (64U * 32U + 32U) * 4U);
  auto x = torch::randn({128, 64}, floats());
  auto loss = layer->forward(x).pow(2).mean();
  loss.backward();  // the CUDA part runs on libtorch's autograd thread, on the job's stream
  ASSERT_TRUE(layer->weight.grad().defined());
  EXPECT_EQ(pool_->owner_of(layer->weight.grad().data_ptr()), job_a_);
  EXPECT_EQ(pool_->owner_of(layer->bias.grad().data_ptr()), job_a_);
  EXPECT_TRUE(std::isfinite(loss.item<float>()));
  EXPECT_EQ(live(job_b_), 0U);
}

TEST_F(CudaAllocator, RecordStreamReachesThePool) {
  cuda_job_stream_binding main(*pool_, job_a_, *stream_a_);
  cuda_job_stream_binding side(*pool_, job_a_, *side_stream_a_);  // a second stream of job a
  const c10::cuda::CUDAStreamGuard on_main(torch_stream(main));
  constexpr std::int64_t elements = 16 * 1024;  // 64 KiB
  // Keeps the region in use: a free that empties a region hands the region back instead (the
  // next allocation would then borrow it anew, not reuse a block).
  const auto keep = torch::empty({elements}, floats());
  {
    // Without record_stream, a freed block is reused at once on its own stream.
    auto first = torch::empty({elements}, floats());
    void* block = first.data_ptr();
    first.reset();
    const auto reuses = pool_->stats(job_a_).same_stream_reuses;
    auto again = torch::empty({elements}, floats());
    EXPECT_EQ(again.data_ptr(), block);
    EXPECT_EQ(pool_->stats(job_a_).same_stream_reuses, reuses + 1);
  }
  // Recorded on a stream whose work is held back, the block waits for that work.
  gate held_back;
  side_stream_a_->launch_host(held_back.closed());
  auto used_on_side = torch::empty({elements}, floats());
  void* block = used_on_side.data_ptr();
  used_on_side.record_stream(torch_stream(side));
  used_on_side.reset();
  auto next = torch::empty({elements}, floats());
  EXPECT_NE(next.data_ptr(), block)
      << "the block was reused while the stream it was recorded on had work pending";
  held_back.open();
  side_stream_a_->synchronize();
  pool_->synchronize(job_a_);
  EXPECT_EQ(live(job_a_), 2 * 64 * KiB);  // next and keep
}

TEST_F(CudaAllocator, RecordStreamOnAStreamNoJobRegisteredIsAClearError) {
  cuda_job_stream_binding bound(*pool_, job_a_, *stream_a_);
  const c10::cuda::CUDAStreamGuard on_job_stream(torch_stream(bound));
  auto tensor = torch::empty({1024}, floats());
  const auto message = message_of<usage_error>(
      [&] { tensor.record_stream(c10::cuda::getDefaultCUDAStream(0)); }, "usage_error");
  EXPECT_TRUE(contains(message, "no job registered")) << message;
  EXPECT_TRUE(contains(message, "default stream")) << message;
}

TEST_F(CudaAllocator, ABudgetTooSmallRaisesOutOfMemoryAndThePoolStaysUsable) {
  cuda_job_stream_binding bound(*pool_, job_a_, *stream_a_);
  const c10::cuda::CUDAStreamGuard on_job_stream(torch_stream(bound));
  const auto message = message_of<memory::out_of_memory_error>(
      [&] {
        (void)torch::empty({64, 1024, 1024}, floats());
      },  // 256 MiB
      "memory::out_of_memory_error");
  EXPECT_TRUE(contains(message, "job 'a' asked for 256.00 MiB")) << message;
  EXPECT_EQ(live(job_a_), 0U);
  EXPECT_GE(pool_->stats(job_a_).out_of_memory, 1U);
  auto fits = torch::ones({1024, 1024}, floats());  // 4 MiB
  EXPECT_EQ(pool_->owner_of(fits.data_ptr()), job_a_);
  EXPECT_EQ(fits.sum().item<float>(), 1024.0F * 1024.0F);
}

// Zico's in-flight limit: with the stream held back, the job's thread gets `limit` allocations
// ahead of the device and then waits in the allocation until the device catches up.
TEST_F(CudaAllocator, TheInflightLimitKeepsAllocationWithinLimitOperationsOfExecution) {
  constexpr std::size_t limit = 4;
  cuda_job_stream_binding bound(*pool_, job_a_, *stream_a_, limit);
  ASSERT_NE(bound.inflight(), nullptr);
  gate held_back;
  stream_a_->launch_host(held_back.closed());
  std::atomic<int> allocated{0};
  std::thread job([&] {
    const c10::cuda::CUDAStreamGuard on_job_stream(torch_stream(bound));
    std::vector<torch::Tensor> tensors;
    for (int op = 0; op < 8; ++op) {
      tensors.push_back(torch::empty({1024}, floats()));
      allocated.fetch_add(1);
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (allocated.load() < static_cast<int>(limit) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(allocated.load(), static_cast<int>(limit))
      << "the allocation past the limit did not wait";
  held_back.open();
  job.join();
  EXPECT_EQ(allocated.load(), 8);
  EXPECT_GE(bound.inflight()->waits(), 1);
  stream_a_->synchronize();
}

TEST_F(CudaAllocator, AnAllocationOnAStreamNoJobRegisteredIsAClearError) {
  // No guard: libtorch's current stream is the device's default stream.
  auto message =
      message_of<usage_error>([&] { (void)torch::empty({1024}, floats()); }, "usage_error");
  EXPECT_TRUE(contains(message, "no job registered")) << message;
  EXPECT_TRUE(contains(message, "default stream")) << message;
  EXPECT_TRUE(contains(message, "job's stream")) << message;
  EXPECT_TRUE(contains(message, "never falls back to cudaMalloc")) << message;
  EXPECT_EQ(torch::empty({0}, floats()).numel(), 0) << "empty tensors need no stream";

  // A stream whose binding is gone is a stranger again.
  std::optional<cuda_job_stream_binding> bound;
  bound.emplace(*pool_, job_a_, *stream_a_);
  const c10::cuda::CUDAStreamGuard on_stream(torch_stream(*bound));
  EXPECT_EQ(pool_->owner_of(torch::empty({1024}, floats()).data_ptr()), job_a_);
  bound.reset();
  message = message_of<usage_error>([&] { (void)torch::empty({1024}, floats()); }, "usage_error");
  EXPECT_TRUE(contains(message, "no job registered")) << message;
  EXPECT_EQ(live(job_a_), 0U);
}

TEST_F(CudaAllocator, AStreamBelongsToOneJob) {
  cuda_job_stream_binding bound(*pool_, job_a_, *stream_a_);
  try {
    cuda_job_stream_binding again(*pool_, job_b_, *stream_a_);
    FAIL() << "registered one stream for two jobs";
  } catch (const usage_error& e) {
    EXPECT_TRUE(contains(e.what(), "registered for job 'a'")) << e.what();
  }
  EXPECT_THROW((cuda_job_stream_binding{*pool_, memory::job_id{77}, *stream_b_}), usage_error)
      << "an unknown job";
  EXPECT_THROW(install_cuda_allocator(*pool_), usage_error) << "installed twice";
}

TEST_F(CudaAllocator, AnUninstalledPoolTakesNoBindings) {
  installed_.reset();
  EXPECT_THROW((cuda_job_stream_binding{*pool_, job_a_, *stream_a_}), usage_error);
  installed_ = std::make_unique<cuda_allocator_scope>(*pool_);  // installing again attaches it
  cuda_job_stream_binding bound(*pool_, job_a_, *stream_a_);
  const c10::cuda::CUDAStreamGuard on_job_stream(torch_stream(bound));
  EXPECT_EQ(pool_->owner_of(torch::empty({1024}, floats()).data_ptr()), job_a_);
}

// Needs no device: both are refused before any CUDA call.
TEST(CudaAllocatorSetup, RefusesStreamsAndPoolsOfOtherBackends) {
  device::cpu_backend backend;
  auto stream = backend.create_stream("cpu", device::stream_kind::compute);
  EXPECT_THROW((void)device::native_handle(*stream), usage_error);
  memory::device_pool pool(backend, pool_of(16 * MiB, 0));
  try {
    install_cuda_allocator(pool);
    uninstall_cuda_allocator(pool);
    FAIL() << "installed a pool of the cpu backend as libtorch's CUDA allocator";
  } catch (const usage_error& e) {
    EXPECT_TRUE(contains(e.what(), "cpu backend")) << e.what();
  }
}

// The refusal needs a process whose libtorch has served CUDA memory itself, so it runs in a
// fresh child process (re-executed, not forked, so that no CUDA state is inherited).
TEST(CudaAllocatorDeathTest, InstallingAfterLibtorchServedCudaMemoryIsRefused) {
  std::string why;
  if (!device::cuda_backend::available(&why)) GTEST_SKIP() << why;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const auto served = torch::zeros({16}, torch::TensorOptions().device(torch::kCUDA, 0));
        device::cuda_backend backend;
        memory::device_pool pool(backend, pool_of(16 * MiB, 0));
        try {
          install_cuda_allocator(pool);
        } catch (const usage_error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::fflush(stderr);
          std::_Exit(0);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "initialised already");
}

}  // namespace
}  // namespace tandem::torch_support
