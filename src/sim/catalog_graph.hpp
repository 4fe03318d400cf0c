#pragma once
// The catalogue's description of a network: the layers of one training iteration in forward
// order, each with the work of its forward and backward pass, the tensors it owns and the memory
// it allocates. The model files (catalog_*.cpp) build it; catalog_lowering.cpp turns it into a
// job_profile. Private to the generator.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tandem::sim::catalog {

/// What an operation mostly does: decides the fraction of the peak the cost model grants it.
enum class op_kind : std::uint8_t {
  convolution,    ///< dense convolution (cuDNN's implicit GEMM)
  depthwise,      ///< depthwise convolution: few FLOPs per byte
  matmul,         ///< GEMM: linear layers, projections
  recurrent,      ///< time steps of a recurrent cell: a skinny GEMM and its gates
  attention,      ///< batched per-head GEMMs and the softmax between them
  elementwise,    ///< activations, additions, dropout, concatenation
  normalization,  ///< batch and layer norm: two passes over the data
  pooling,
  embedding,  ///< gathers (forward) and scatter-adds (backward)
  loss,
  optimizer,
  transfer,  ///< the batch's host-to-device copy
};

/// The cost of one direction (forward or backward) of a layer.
struct work {
  double flops = 0;
  double bytes = 0;   ///< device memory read and written
  double blocks = 1;  ///< thread blocks of its widest kernel: how much of the device it fills
  int kernels = 0;    ///< launches; 0 for no work at all
  [[nodiscard]] bool none() const { return kernels == 0; }
};

/// A layer whose output backward needs keeps it until its own backward has run.
inline constexpr std::size_t kept_for_backward = std::numeric_limits<std::size_t>::max();
/// No layer: where a layer reads only the parameters it declares.
inline constexpr std::size_t no_layer = std::numeric_limits<std::size_t>::max();

struct layer {
  std::string name;
  op_kind kind = op_kind::elementwise;
  work forward;
  work backward;
  std::vector<std::int64_t> parameters;    ///< elements of each parameter tensor (fp32)
  std::vector<std::int64_t> buffer_bytes;  ///< each buffer (batch-norm running statistics)
  /// The output, allocated when the forward starts and freed when the backward ends, or, for an
  /// output backward does not need, once the forward of layer `output_freed_after` has run.
  std::int64_t output_bytes = 0;
  std::size_t output_freed_after = kept_for_backward;
  std::int64_t saved_bytes = 0;  ///< more kept for backward: masks, statistics, gates, indices
  /// saved_bytes is this many tensors of equal size, allocated and freed one by one (batch and
  /// layer norm's mean and inverse deviation; attention's keys and values).
  std::int64_t saved_tensors = 1;
  /// The forward makes its saved tensors before its output (batch norm: the statistics, then the
  /// map): the order of the access sequence's tensors.
  bool saved_before_output = false;
  std::int64_t forward_scratch_bytes = 0;   ///< temporaries of the forward (workspace)
  std::int64_t backward_scratch_bytes = 0;  ///< temporaries of the backward
  /// The gradient with respect to the layer's input that its backward produces; the backward
  /// of the layer before consumes it. 0 where the input needs none (the batch) or where the
  /// gradient passes through unchanged (additions, concatenation).
  std::int64_t input_gradient_bytes = 0;
  /// Its forward draws random numbers (dropout masks): recomputing it must replay the generator.
  bool random = false;
  /// The layer whose parameters this one also reads, forward and backward: a recurrence's steps
  /// the weights declared on its input projection, later decoder frames the first frame's, a
  /// tied layer the embedding's table. The access sequence's reads only; work and memory are
  /// counted where the parameters are declared.
  std::size_t reads_parameters_of = no_layer;
};

struct network {
  std::int64_t batch = 0;
  std::vector<layer> layers;
  /// The optimizer updates each parameter tensor with an operation of its own (TensorFlow 1.x's
  /// ApplyMomentum, ApplyAdam), not PyTorch's multi-tensor launches.
  bool per_variable_step = false;

  /// Appends `l` and returns its index.
  std::size_t add(layer l) {
    layers.push_back(std::move(l));
    return layers.size() - 1;
  }
  [[nodiscard]] std::size_t last_index() const { return layers.size() - 1; }
  /// Frees the output of the last layer once the forward of the layer added next has run: for
  /// outputs only a following layer reads and no backward needs.
  void release_last_after_next() { layers.back().output_freed_after = layers.size(); }
  /// Frees the output of layer `index` once the forward of the last layer added has run.
  void release_after_last(std::size_t index) { layers[index].output_freed_after = last_index(); }
};

/// Trainable parameters of `net` (sum of its parameter tensors' elements).
[[nodiscard]] std::int64_t parameter_count(const network& net);

/// Every byte `net` would allocate in an iteration and keep between them, summed in floating
/// point: more than the most it can hold at once, and safe from overflow.
[[nodiscard]] double bytes_upper_bound(const network& net);

}  // namespace tandem::sim::catalog
