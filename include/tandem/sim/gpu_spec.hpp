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
  // The host that drives the GPU (docs/sim-models.md, "Host time"): what each paper's machine
  // with this GPU spends issuing work. Host time fills nothing on the device; a job's host runs
  // ahead of its device up to `in_flight_ops` operations (src/sim/host_stream.hpp).
  /// Host seconds per kernel: the framework's dispatch of the operation plus the launch.
  double kernel_launch_s = 5e-6;
  /// Host seconds per iteration besides the kernels: the training loop, input handling, the
  /// loss read back (a synchronization: the next iteration starts when the device is done).
  double iteration_host_s = 0;
  /// The shortest a kernel runs on the device, however little work it has (launch latency on
  /// the device, ramp-up and tail of its blocks).
  double min_kernel_s = 0;
  /// Operations a job's host may issue ahead of the last one its device completed (Zico §6.1's
  /// in-flight limit); 0: no limit.
  std::size_t in_flight_ops = 0;
  /// Host cores the co-located jobs' host threads share (the papers' machines); 0: one each.
  unsigned host_cores = 0;
  std::string host_source;  ///< where the host figures come from
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
