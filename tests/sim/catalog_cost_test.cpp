// The cost model's fill (src/sim/catalog_cost.cpp): what an operation leaves of the device to
// another job. A kernel's thread blocks run in waves; its last wave fills the device only partly,
// so over the kernel the device is that much emptier, while the kernel alone takes as long.

#include "../../src/sim/catalog_cost.hpp"

#include <gtest/gtest.h>

#include "tandem/sim/gpu_spec.hpp"

namespace tandem::sim::catalog {
namespace {

work gemm_of_blocks(double blocks) {
  work w;
  w.flops = 1e12;
  w.bytes = 1e6;
  w.blocks = blocks;
  w.kernels = 1;
  return w;
}

TEST(CostModel, ALastWavePartlyFullLeavesTheRestOfTheDeviceToOthers) {
  const auto& gpu = find_gpu("v100");
  const double wave = static_cast<double>(gpu.sm_count * gpu.saturating_blocks_per_sm);
  const op_cost half_wave = cost_of(op_kind::matmul, gemm_of_blocks(wave / 2), gpu);
  const op_cost one_wave = cost_of(op_kind::matmul, gemm_of_blocks(wave), gpu);
  const op_cost one_and_half = cost_of(op_kind::matmul, gemm_of_blocks(1.5 * wave), gpu);
  const op_cost many = cost_of(op_kind::matmul, gemm_of_blocks(40.5 * wave), gpu);
  EXPECT_DOUBLE_EQ(half_wave.fill, 0.5);
  EXPECT_DOUBLE_EQ(one_wave.fill, 1.0);
  EXPECT_DOUBLE_EQ(one_and_half.fill, 0.75);  // two waves, the second half full
  EXPECT_NEAR(many.fill, 40.5 / 41, 1e-12);
  // Alone, a kernel that fills the device in its first wave takes the same time however many
  // blocks it has: the efficiency of its kind already includes its tail.
  EXPECT_DOUBLE_EQ(one_and_half.seconds, one_wave.seconds);
  EXPECT_DOUBLE_EQ(half_wave.seconds, 2 * one_wave.seconds);
}

}  // namespace
}  // namespace tandem::sim::catalog
