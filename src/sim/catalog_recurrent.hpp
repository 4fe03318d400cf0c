#pragma once
// Recurrent layers as cuDNN and eager frameworks run them: one large GEMM projects the whole
// input sequence, then each time step runs a small GEMM on the previous state and the gates.
// The step GEMMs have `batch` rows, so at small batches they launch few thread blocks and fill a
// fraction of the device: the under-use the Zico paper (§1) describes for GNMT and RHN. Each step
// keeps its gates and state for backward, which is why memory grows with the sequence length.

#include <cstdint>
#include <string>

#include "catalog_graph.hpp"

namespace tandem::sim::catalog {

struct recurrent_spec {
  std::int64_t steps = 0;   ///< time steps
  std::int64_t input = 0;   ///< input features per step
  std::int64_t hidden = 0;  ///< state width (per direction)
  std::int64_t directions = 1;
  /// Time steps per operation: 1 keeps one operation per step; long sequences group steps so
  /// that a profile stays at a few thousand operations.
  std::int64_t steps_per_op = 1;
  /// Operations the framework issues per time step and direction, forward and backward; 0:
  /// cuDNN's (a GEMM and one fused kernel per step, both directions at once). A TensorFlow 1.x
  /// graph issues every gate as its own kernel and runs the loop's control flow on the host
  /// (docs/sim-models.md, "Frameworks").
  int forward_ops_per_step = 0;
  int backward_ops_per_step = 0;
};

/// Steps per operation that keep `steps` x `layers` recurrent operations near 1024 at most.
[[nodiscard]] std::int64_t steps_per_op_for(std::int64_t steps, std::int64_t layers);

/// An LSTM layer (PyTorch's parameters: W_ih, W_hh, b_ih, b_hh per direction); both directions
/// of a bidirectional layer run at once. Output: [batch, steps, directions x hidden].
void lstm(network& net, const std::string& name, const recurrent_spec& spec);

/// A recurrent highway network layer (Zilly et al. 2017) with coupled carry gate and `depth`
/// micro-layers per step: only the first sees the input. Output: [batch, steps, hidden].
void rhn(network& net, const std::string& name, const recurrent_spec& spec, std::int64_t depth);

}  // namespace tandem::sim::catalog
