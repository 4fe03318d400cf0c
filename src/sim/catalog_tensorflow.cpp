#include "catalog_tensorflow.hpp"

namespace tandem::sim::catalog {
namespace {

/// tf.layers / slim batch norm in training updates its moving mean and variance with
/// assign_moving_average: a sub, a mul and an AssignSub each, besides FusedBatchNorm.
constexpr int batch_norm_moving_average_ops = 6;
/// tf.contrib.layers.layer_norm: moments (mean, stop_gradient, squared_difference, mean) and
/// batch_normalization (add, rsqrt, three muls, sub, add); its gradient about twice that.
constexpr int layer_norm_forward_ops = 11;
constexpr int layer_norm_backward_ops = 22;
/// tf.nn.dropout: random_uniform, add, floor, div, mul; its gradient a div and a mul.
constexpr int dropout_forward_ops = 5;
constexpr int dropout_backward_ops = 2;
/// An L2-regularised weight: L2Loss and the scale's Mul forward (their sum's AddN is counted
/// with the loss); backward the Mul's and L2Loss's gradients and the AddN that adds them to the
/// weight's gradient from the network.
constexpr int l2_forward_ops = 2;
constexpr int l2_backward_ops = 3;

bool has_weight(const layer& l) {
  return !l.parameters.empty() && (l.kind == op_kind::convolution || l.kind == op_kind::depthwise ||
                                   l.kind == op_kind::matmul);
}

}  // namespace

void lower_as_tensorflow1(network& net, bool l2_weight_decay) {
  for (auto& l : net.layers) {
    if (l2_weight_decay && has_weight(l)) {
      l.forward.kernels += l2_forward_ops;
      l.backward.kernels += l2_backward_ops;
    }
    if (l.kind == op_kind::normalization && !l.buffer_bytes.empty()) {
      l.forward.kernels += batch_norm_moving_average_ops;
    } else if (l.kind == op_kind::normalization) {
      l.forward.kernels = layer_norm_forward_ops;
      l.backward.kernels = layer_norm_backward_ops;
    } else if (l.kind == op_kind::elementwise && l.random) {
      l.forward.kernels = dropout_forward_ops;
      l.backward.kernels = dropout_backward_ops;
    }
  }
  net.per_variable_step = true;
}

}  // namespace tandem::sim::catalog
