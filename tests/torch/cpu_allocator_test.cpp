// libtorch on the pool: tensors made on a bound thread land in the pool under the job, real
// training runs on them, and the budget holds.

#include "tandem/torch/cpu_allocator.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "tandem/device/cpu_backend.hpp"
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

class TorchOnPool : public ::testing::Test {
 protected:
  device::cpu_backend backend_;
  std::unique_ptr<device::stream> stream_ =
      backend_.create_stream("job", device::stream_kind::compute);
  memory::device_pool pool_{backend_, pool_of(256 * MiB, 128 * MiB)};
  memory::job_id job_ = pool_.add_job("mlp");
};

TEST_F(TorchOnPool, TensorsOfABoundThreadLandInThePool) {
  cpu_allocator_scope installed(pool_);
  {
    job_binding bound(pool_, job_, *stream_);
    auto t = torch::ones({256, 256});
    EXPECT_TRUE(pool_.owns(t.data_ptr()));
    EXPECT_EQ(pool_.owner_of(t.data_ptr()), job_);
    EXPECT_GE(pool_.stats(job_).live_bytes, 256u * 256u * 4u);
  }
  EXPECT_EQ(pool_.stats(job_).live_bytes, 0u) << "the tensor's memory went back to the pool";
  auto outside = torch::ones({16});
  EXPECT_FALSE(pool_.owns(outside.data_ptr())) << "unbound threads keep libtorch's allocator";
}

TEST_F(TorchOnPool, RawAllocationsOfBoundAndUnboundThreadsAreFreedByTheirOwnAllocator) {
  // Convolutions take scratch memory through raw_allocate/raw_deallocate.
  cpu_allocator_scope installed(pool_);
  auto* allocator = c10::GetAllocator(c10::DeviceType::CPU);
  void* outside = allocator->raw_allocate(4096);
  EXPECT_FALSE(pool_.owns(outside));
  {
    job_binding bound(pool_, job_, *stream_);
    void* inside = allocator->raw_allocate(1 * MiB);
    EXPECT_EQ(pool_.owner_of(inside), job_);
    allocator->raw_deallocate(inside);
    allocator->raw_deallocate(outside);  // made outside the job, freed by libtorch's allocator
  }
  EXPECT_EQ(pool_.stats(job_).live_bytes, 0u);
  EXPECT_EQ(pool_.stats().invalid_frees, 0u);
}

TEST_F(TorchOnPool, AConvolutionalNetworkTrainsOnThePool) {
  cpu_allocator_scope installed(pool_);
  job_binding bound(pool_, job_, *stream_);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  auto out = conv->forward(torch::randn({4, 3, 16, 16})).sum();
  out.backward();
  EXPECT_TRUE(pool_.owns(conv->weight.grad().data_ptr()));
}

TEST_F(TorchOnPool, KindScopeTagsPersistentState) {
  cpu_allocator_scope installed(pool_);
  job_binding bound(pool_, job_, *stream_);
  torch::Tensor weights;
  {
    kind_scope persistent(alloc_kind::persistent);
    weights = torch::zeros({128, 128});
  }
  auto activation = torch::zeros({128, 128});
  const auto stats = pool_.stats(job_);
  EXPECT_EQ(stats.by_kind[memory::index_of(alloc_kind::persistent)].live_bytes, 128u * 128u * 4u);
  EXPECT_EQ(stats.by_kind[memory::index_of(alloc_kind::unknown)].live_bytes, 128u * 128u * 4u);
}

TEST_F(TorchOnPool, AnMlpTrainsOnThePoolAndItsLossFalls) {
  cpu_allocator_scope installed(pool_);
  job_binding bound(pool_, job_, *stream_);
  torch::manual_seed(0);
  torch::nn::Sequential model;
  torch::Tensor teacher;
  {
    kind_scope persistent(alloc_kind::persistent);
    model = torch::nn::Sequential(torch::nn::Linear(32, 64), torch::nn::ReLU(),
                                  torch::nn::Linear(64, 1));
    teacher = torch::randn({32, 1});
  }
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  float first = 0;
  float last = 0;
  for (int step = 0; step < 60; ++step) {
    auto x = torch::randn({64, 32});
    auto y = torch::matmul(x, teacher);  // a learnable target, not noise
    auto loss = torch::mse_loss(model->forward(x), y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
    ASSERT_TRUE(pool_.owns(x.data_ptr()));
  }
  EXPECT_LT(last, first / 4) << "loss " << first << " -> " << last;
  EXPECT_GT(pool_.stats(job_).peak_live_bytes, 0u);
  EXPECT_LE(pool_.stats().peak_reserved_bytes, pool_.budget());
}

TEST_F(TorchOnPool, ABudgetTooSmallRaisesTheTypedErrorAndLeavesThePoolUsable) {
  cpu_allocator_scope installed(pool_);
  job_binding bound(pool_, job_, *stream_);
  EXPECT_THROW((void)torch::ones({1024, 1024, 64}), memory::out_of_memory_error);  // 256 MiB
  EXPECT_EQ(pool_.stats(job_).live_bytes, 0u);
  auto fits = torch::ones({1024, 1024});
  EXPECT_TRUE(pool_.owns(fits.data_ptr()));
}

/// Counts the allocations its hook hears of, taking back the refused ones.
class counting_hook final : public allocation_hook {
 public:
  void before_allocation(std::size_t bytes) override {
    if (bytes > 0) ++counted;
  }
  void allocation_refused() noexcept override {
    --counted;
    ++refused;
  }
  int counted = 0;
  int refused = 0;
};

// A hook that numbers allocations (NodeGroup's boundaries) hears of a refused one, so that an
// allocation put off (a prefetch) does not shift the numbers of those that happen.
TEST_F(TorchOnPool, TheHookHearsOfAnAllocationThePoolRefused) {
  cpu_allocator_scope installed(pool_);
  counting_hook hook;
  job_binding bound(pool_, job_, *stream_, nullptr, &hook);
  auto fits = torch::ones({1024, 1024});
  EXPECT_EQ(hook.counted, 1);
  EXPECT_THROW((void)torch::ones({1024, 1024, 64}), memory::out_of_memory_error);
  EXPECT_EQ(hook.counted, 1);
  EXPECT_EQ(hook.refused, 1);
}

TEST_F(TorchOnPool, TwoJobsOnTwoThreadsAreAttributedToTheirOwnJob) {
  cpu_allocator_scope installed(pool_);
  const auto other = pool_.add_job("other");
  auto other_stream = backend_.create_stream("other", device::stream_kind::compute);
  auto run = [&](memory::job_id job, device::stream& stream, std::int64_t side) {
    job_binding bound(pool_, job, stream);
    auto t = torch::ones({side, side});
    EXPECT_EQ(pool_.owner_of(t.data_ptr()), job);
    EXPECT_GE(pool_.stats(job).live_bytes, static_cast<std::size_t>(side * side * 4));
  };
  std::thread a(run, job_, std::ref(*stream_), 300);
  std::thread b(run, other, std::ref(*other_stream), 500);
  a.join();
  b.join();
  EXPECT_EQ(pool_.stats(job_).live_bytes, 0u);
  EXPECT_EQ(pool_.stats(other).live_bytes, 0u);
  pool_.detach_stream(other, *other_stream);  // the stream dies before the pool
}

TEST(TorchInstall, InstallingTwiceIsAClearError) {
  device::cpu_backend backend;
  memory::device_pool pool(backend, pool_of(64 * MiB, 0));
  cpu_allocator_scope installed(pool);
  EXPECT_THROW(install_cpu_allocator(pool), usage_error);
}

}  // namespace
}  // namespace tandem::torch_support
