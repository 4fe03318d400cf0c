#include "catalog_cost.hpp"

#include <algorithm>
#include <cmath>

#include "host_stream.hpp"

namespace tandem::sim::catalog {
namespace {

/// Fractions of the FP32 peak and of the memory bandwidth an operation of each kind reaches
/// when it fills the device: cuBLAS SGEMM runs near 80% of peak, cuDNN's FP32 convolutions
/// about 70% (less in backward, folded in here), depthwise convolutions are bound by memory;
/// streaming kernels reach 70-80% of the bandwidth, gathers and scatters about half.
struct efficiency {
  double compute;
  double bandwidth;
};

efficiency efficiency_of(op_kind kind) {
  switch (kind) {
    case op_kind::convolution:
      return {0.70, 0.75};
    case op_kind::depthwise:
      return {0.30, 0.60};
    case op_kind::matmul:
      return {0.80, 0.80};
    case op_kind::recurrent:
      return {0.75, 0.70};
    case op_kind::attention:
      return {0.60, 0.75};
    case op_kind::elementwise:
    case op_kind::optimizer:
      return {0.50, 0.80};
    case op_kind::normalization:
    case op_kind::pooling:
    case op_kind::loss:
      return {0.50, 0.70};
    case op_kind::embedding:
      return {0.50, 0.50};
    case op_kind::transfer:
      break;
  }
  return {1.0, 1.0};
}

}  // namespace

op_cost cost_of(op_kind kind, const work& w, const gpu_spec& gpu) {
  // Issuing the kernels is host time: it leaves the device to others (Note [Host runs ahead]).
  const double kernels = static_cast<double>(w.kernels);
  const double host_s = kernels * gpu.kernel_launch_s;
  const double shortest = kernels * gpu.min_kernel_s;
  const double saturating = static_cast<double>(gpu.sm_count * gpu.saturating_blocks_per_sm);
  const double one_block = 1.0 / saturating;
  if (kind == op_kind::transfer) {
    // The copy engines move the batch; the SMs are free for others.
    return {std::max(w.bytes / gpu.pcie_bandwidth, shortest), one_block, host_s};
  }
  const double fill = std::clamp(w.blocks / saturating, one_block, 1.0);
  const efficiency e = efficiency_of(kind);
  const double compute_s = w.flops / (gpu.fp32_flops * e.compute * fill);
  const double memory_s = w.bytes / (gpu.memory_bandwidth * e.bandwidth * fill);
  const double waves = w.blocks / saturating;
  const double occupancy = waves <= 1 ? fill : waves / std::ceil(waves);
  return {std::max({compute_s, memory_s, shortest}), occupancy, host_s};
}

std::vector<double> solo_completions(const std::vector<op_cost>& costs, const gpu_spec& gpu) {
  std::vector<detail::stream_stage> stages;
  stages.reserve(costs.size());
  for (const auto& c : costs) stages.push_back({c.host_s, c.seconds});
  if (!stages.empty()) stages.front().host_s += gpu.iteration_host_s;
  return detail::solo_completions(stages, gpu.in_flight_ops);
}

}  // namespace tandem::sim::catalog
