#pragma once
// The copy bandwidth that makes swapping on the CPU backend cost, against compute, what it costs
// on a GPU over PCIe: this machine's GEMM rate (one core, libtorch's own kernels) scaled by a
// V100's ratio of PCIe 3.0 x16 bandwidth (about 12 GB/s in practice) to its FP32 peak
// (15.7 TFLOP/s). A job training on one thread then waits for a swap as long, relative to its
// compute, as a V100 job would. `copy_bandwidth = "auto"` in a workload's [device] uses it.

namespace tandem::torch_support {

inline constexpr double reference_gpu_flops = 15.7e12;    ///< V100 FP32 peak
inline constexpr double reference_pcie_bandwidth = 12e9;  ///< PCIe 3.0 x16, bytes/s achieved

/// FLOP/s of a 512 x 512 single-precision matrix product on one thread, measured once per
/// process (the median of five runs; about 0.1 s in all) and remembered.
[[nodiscard]] double measured_gemm_flops();

/// measured_gemm_flops() x reference_pcie_bandwidth / reference_gpu_flops, in bytes per second.
[[nodiscard]] double matched_copy_bandwidth();

}  // namespace tandem::torch_support
