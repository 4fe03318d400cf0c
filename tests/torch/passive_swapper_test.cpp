// Capuchin's passive mode on real libtorch training: under a budget below the job's vanilla peak
// the job's own least recently used tensors leave the pool on demand, the losses stay bitwise
// those of the job with all the memory it wants, and the access sequence recorded meanwhile is
// the one recorded without any pressure.

#include "tandem/torch/passive_swapper.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "tandem/common/units.hpp"
#include "tandem/device/copy_channel.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/memory/out_of_memory.hpp"
#include "tandem/memory/pressure_relief.hpp"
#include "training_fixture.hpp"

namespace tandem::torch_support {
namespace {

using testing::training;
using testing::zoo;

constexpr std::int64_t iterations = 4;

struct recorded_run {
  std::vector<double> losses;
  footprint::access_sequence sequence;
  std::size_t highest_reserved = 0;  ///< the most bytes of regions the pool held
  passive_stats stats;
};

/// Iteration 1 recorded, the others plain; under `budget` (0: as much as it wants) with a
/// passive swapper throughout.
recorded_run run(std::size_t budget) {
  training job(zoo("resnet20", 16));
  if (budget > 0) job.pool().set_budget(budget);
  device::copy_channel channel(job.backend());
  passive_swapper swapper(job.pool(), job.job(), channel);
  recorded_run out;
  for (std::int64_t i = 0; i < iterations; ++i) {
    std::size_t peak = 0;
    double loss = 0;
    if (i == 1) {
      out.sequence = job.record(i, loss, &swapper);
    } else {
      loss = job.plain(i, peak, &swapper);
    }
    out.losses.push_back(loss);
    out.highest_reserved = std::max(out.highest_reserved, job.pool().stats().peak_reserved_bytes);
  }
  out.stats = swapper.stats();
  return out;
}

TEST(PassiveSwapper, UnderABudgetBelowTheVanillaPeakTheLossesAndTheRecordedSequenceStayTheSame) {
  const auto free_run = run(0);
  ASSERT_EQ(free_run.stats.evictions, 0u) << "with memory to spare nothing moves";
  const auto vanilla_peak = footprint::predict(free_run.sequence, footprint::plan{}).peak_bytes;
  // Two thirds of the vanilla peak, in whole regions: far below what the job holds plainly.
  const std::size_t budget = (vanilla_peak * 2 / 3) / (2 * MiB) * (2 * MiB);
  ASSERT_GT(free_run.highest_reserved, budget);

  const auto pressed = run(budget);
  EXPECT_GT(pressed.stats.evictions, 0u);
  EXPECT_GT(pressed.stats.swapped_out_bytes, 0u);
  EXPECT_GT(pressed.stats.swapped_in_bytes, 0u);
  EXPECT_LE(pressed.highest_reserved, budget) << "the budget is hard";

  ASSERT_EQ(free_run.losses.size(), pressed.losses.size());
  for (std::size_t i = 0; i < free_run.losses.size(); ++i)
    EXPECT_EQ(free_run.losses[i], pressed.losses[i]) << "iteration " << i;  // bitwise

  const auto& a = free_run.sequence;
  const auto& b = pressed.sequence;
  ASSERT_EQ(a.operations.size(), b.operations.size());
  for (std::size_t i = 0; i < a.operations.size(); ++i) {
    EXPECT_EQ(a.operations[i].name, b.operations[i].name) << "operation " << i;
    EXPECT_EQ(a.operations[i].where, b.operations[i].where) << "operation " << i;
    EXPECT_EQ(a.operations[i].recomputable, b.operations[i].recomputable) << "operation " << i;
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& x = a.tensors[i];
    const auto& y = b.tensors[i];
    EXPECT_EQ(x.name, y.name) << "tensor " << i;
    EXPECT_EQ(x.bytes, y.bytes) << "tensor " << i;
    EXPECT_EQ(x.role, y.role) << "tensor " << i;
    EXPECT_EQ(x.allocation, y.allocation) << "tensor " << i;
    EXPECT_EQ(x.created_by, y.created_by) << "tensor " << i;
    EXPECT_EQ(x.read_by, y.read_by) << "tensor " << i;
    EXPECT_EQ(x.freed_after, y.freed_after) << "tensor " << i;
  }
  EXPECT_EQ(footprint::predict(b, footprint::plan{}).peak_bytes, vanilla_peak);
}

TEST(PassiveSwapper, ABudgetThatCannotHoldOneOperationStillFailsAsOutOfMemory) {
  training job(zoo("resnet20", 16));
  job.pool().set_budget(2 * MiB);  // one region: not even one operation's tensors fit
  device::copy_channel channel(job.backend());
  passive_swapper swapper(job.pool(), job.job(), channel);
  swapper.begin();
  EXPECT_THROW(static_cast<void>(job.step(0)), memory::out_of_memory_error);
  swapper.end();
  EXPECT_FALSE(swapper.active());
}

/// One job on a cpu pool of 64 MiB (2 MiB regions) under `budget`; this thread's tensors are
/// allocated for it.
struct bound_job {
  device::cpu_backend backend;
  std::unique_ptr<device::stream> stream =
      backend.create_stream("job", device::stream_kind::compute);
  memory::device_pool pool{backend, testing::pool_of(64 * MiB)};
  memory::job_id job = pool.add_job("job");
  cpu_allocator_scope installed{pool};
  job_binding bound{pool, job, *stream};
  device::copy_channel channel{backend};
  explicit bound_job(std::size_t budget) { pool.set_budget(budget); }
};

/// 1 MiB of floats.
at::Tensor mib() {
  return torch::ones({256 * 1024});
}

// An input that cannot come back (its operation pins every other tensor, and the budget was
// lowered meanwhile) fails the iteration at end(): libtorch would swallow the error where it
// happens, in the operation's start callback.
TEST(PassiveSwapper, AnInputThatFindsNoRoomToComeBackFailsTheIterationAtItsEnd) {
  bound_job bound(2 * MiB);  // one region of 2 MiB
  auto& pool = bound.pool;
  passive_swapper swapper(pool, bound.job, bound.channel);
  swapper.begin();
  auto a = mib();
  auto b = mib();
  auto c = mib();  // no room: a, the least recently used, goes out
  EXPECT_EQ(swapper.stats().evictions, 1u);
  b.addcmul_(a, c);  // pins b, a and c: a finds no room to come back
  a.reset();         // gone while out: end() has nothing to bring back, yet fails
  EXPECT_THROW(swapper.end(), memory::out_of_memory_error);
  EXPECT_FALSE(swapper.active());
  // b + a * c, computed on a's host copy; read in place (no room for a comparison's tensors).
  const float* values = b.data_ptr<float>();
  EXPECT_EQ(values[0], 2.0f);
  EXPECT_EQ(values[256 * 1024 - 1], 2.0f);
}

/// Stands in for the plan executor the swapper falls back for: gives up the tensors it holds,
/// one per call, at the moments it is asked.
class releasing_relief final : public memory::pressure_relief {
 public:
  std::vector<at::Tensor> held;
  std::vector<memory::relief_moment> asked;
  bool relieve(memory::job_id /*job*/, std::size_t /*bytes*/,
               memory::relief_moment moment) override {
    asked.push_back(moment);
    if (moment != memory::relief_moment::instead_of_failing || held.empty()) return false;
    held.pop_back();
    return true;
  }
};

// Beside a plan, the swapper is the last resort: the executor's own moves come first, so
// nothing no plan priced leaves the pool while the executor can still make room.
TEST(PassiveSwapper, BesideAPlanTheExecutorIsAskedFirstAndTheSwapperMovesOnlyWhatItCannot) {
  bound_job bound(4 * MiB);  // two regions of 2 MiB
  auto& pool = bound.pool;
  const auto job = bound.job;
  releasing_relief executor;
  pool.set_pressure_relief(job, &executor);
  passive_swapper swapper(pool, job, bound.channel);
  swapper.begin();
  executor.held = {mib(), mib()};
  auto a = mib();
  auto b = mib();  // the budget is full
  auto c = mib();  // the executor gives up one of its tensors
  EXPECT_EQ(swapper.stats().evictions, 0u);
  ASSERT_FALSE(executor.asked.empty());
  EXPECT_TRUE(std::ranges::none_of(executor.asked, [](auto moment) {
    return moment == memory::relief_moment::before_waiting;
  })) << "the executor moves out of turn only where the allocation would fail";
  auto d = mib();  // and its last
  EXPECT_EQ(swapper.stats().evictions, 0u);
  EXPECT_TRUE(executor.held.empty());
  auto e = mib();  // nothing left to the executor: the swapper moves a, the least recently used
  EXPECT_EQ(swapper.stats().evictions, 1u);
  e.reset();
  swapper.end();  // a comes back into the room e left
  pool.clear_pressure_relief(job, &executor);
  EXPECT_TRUE(pool.owns(a.data_ptr()));
  EXPECT_EQ(a.data_ptr<float>()[0], 1.0f);  // intact (read in place: no room for a sum)
  EXPECT_EQ(a.data_ptr<float>()[256 * 1024 - 1], 1.0f);
}

}  // namespace
}  // namespace tandem::torch_support
