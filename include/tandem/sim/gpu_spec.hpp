#pragma once
// The GPUs the profile generator can time a model on: datasheet figures (FP32 throughput, memory
// size and bandwidth, host link) plus the few constants the cost model needs (docs/sim-models.md).
// The papers trained in FP32, so the throughput is the FP32 peak (no tensor cores, no TF32).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::sim {

struct gpu_spec {
  std::string name;         ///< "V100-32GB"
  std::string description;  ///< a line for reports
  std::size_t memory_bytes = 0;
  double fp32_flops = 0;        ///< peak FP32 FLOP/s at boost clock
  double memory_bandwidth = 0;  ///< peak device-memory bytes/s
  /// Host link bytes/s a large pinned copy achieves (about 75-80% of the theoretical figure).
  double pcie_bandwidth = 0;
  int sm_count = 0;
  std::string source;  ///< where the numbers come from
  /// Gap per kernel between back-to-back launches from an eager framework (host dispatch plus
  /// launch latency): what keeps a GPU idle between tiny kernels.
  double kernel_launch_s = 5e-6;
  /// Thread blocks per SM that saturate it; a kernel with fewer blocks than sm_count times this
  /// leaves part of the device idle (its fill is below 1).
  int saturating_blocks_per_sm = 2;
  std::vector<std::string> aliases;  ///< short names find_gpu accepts ("v100")
};

/// Every spec, in order of release.
[[nodiscard]] const std::vector<gpu_spec>& gpu_specs();

/// The spec named `name` or one of its aliases, ignoring case, spaces, '-' and '_' ("v100",
/// "A100-80GB", "a100_80gb", "2080ti"). Throws config_error naming `name`, listing the known
/// GPUs and suggesting the closest.
[[nodiscard]] const gpu_spec& find_gpu(std::string_view name);

}  // namespace tandem::sim
