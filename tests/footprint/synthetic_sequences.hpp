#pragma once
// Access sequences for the footprint tests: a builder for hand-made ones whose answers are worked
// out on paper, and CNN-like chains (forward layers, a loss, backward layers mirroring them, an
// optimizer step) for the planners.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"

namespace tandem::footprint::testing {

/// Operations run back to back (after `gap_s` of idle time each) in the order they are added.
class sequence_builder {
 public:
  explicit sequence_builder(std::string model = "hand-made") { sequence_.model = std::move(model); }

  std::size_t op(std::string name, double duration_s, phase where = phase::forward,
                 op_kind kind = op_kind::other, double gap_s = 0) {
    const double start = next_start_ + gap_s;
    sequence_.operations.push_back({std::move(name), where, kind, start, duration_s, false});
    next_start_ = start + duration_s;
    return sequence_.operations.size() - 1;
  }

  /// A tensor created by `created_by` (none: persistent) and read by `read_by`.
  std::size_t tensor(std::string name, std::size_t bytes, std::optional<std::size_t> created_by,
                     std::vector<std::size_t> read_by, tensor_role role = tensor_role::activation,
                     std::optional<std::size_t> freed_after = std::nullopt) {
    if (!created_by && role == tensor_role::activation) role = tensor_role::parameter;
    sequence_.tensors.push_back(
        {std::move(name), bytes, role, created_by, std::move(read_by), freed_after, std::nullopt});
    return sequence_.tensors.size() - 1;
  }

  sequence_builder& other_bytes(std::size_t bytes) {
    sequence_.other_bytes = bytes;
    return *this;
  }

  [[nodiscard]] const access_sequence& get() const { return sequence_; }

 private:
  access_sequence sequence_;
  double next_start_ = 0;
};

struct layer_spec {
  std::string name;
  op_kind kind = op_kind::convolution;
  std::size_t output_bytes = 0;
  double forward_s = 0;
  std::size_t weight_bytes = 0;  ///< 0: no parameter (relu, pooling)
};

/// input -> layers... -> loss -> backward of each layer in reverse -> optimizer step. Layer k's
/// forward reads the previous activation (and its weight); its backward reads the gradient of
/// its output, its saved input (and its weight), takes twice the forward's time and makes the
/// gradient of its input (and of its weight). Activations live until the backward reads them.
inline access_sequence cnn_sequence(const std::vector<layer_spec>& layers, std::size_t input_bytes,
                                    std::string model = "synthetic-cnn", double gap_s = 0) {
  sequence_builder b(std::move(model));
  const auto n = layers.size();
  const auto input_op = b.op("input", 1e-4, phase::forward, op_kind::other);
  std::vector<std::size_t> forward(n);
  for (std::size_t k = 0; k < n; ++k)
    forward[k] = b.op(layers[k].name, layers[k].forward_s, phase::forward, layers[k].kind, gap_s);
  const auto loss = b.op("loss", 2e-4, phase::forward, op_kind::other, gap_s);
  std::vector<std::size_t> backward(n);
  for (std::size_t k = n; k-- > 0;)
    backward[k] = b.op(layers[k].name + ".backward", 2 * layers[k].forward_s, phase::backward,
                       layers[k].kind, gap_s);
  const auto step = b.op("sgd_step", 5e-4, phase::optimizer, op_kind::optimizer, gap_s);

  // Activation k (k = 0: the input batch) is read by layer k's forward and backward.
  for (std::size_t k = 0; k <= n; ++k) {
    const auto creator = k == 0 ? input_op : forward[k - 1];
    const auto bytes = k == 0 ? input_bytes : layers[k - 1].output_bytes;
    std::vector<std::size_t> readers;
    if (k < n)
      readers = {forward[k], backward[k]};
    else
      readers = {loss};
    b.tensor(k == 0 ? "input" : layers[k - 1].name + ".out", bytes, creator, readers);
  }
  // The gradient of layer k's output comes from the layer after it (or the loss).
  for (std::size_t k = 0; k < n; ++k) {
    const auto creator = k + 1 < n ? backward[k + 1] : loss;
    b.tensor(layers[k].name + ".grad", layers[k].output_bytes, creator, {backward[k]},
             tensor_role::gradient);
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (layers[k].weight_bytes == 0) continue;
    b.tensor(layers[k].name + ".weight", layers[k].weight_bytes, std::nullopt,
             {forward[k], backward[k], step}, tensor_role::parameter);
    b.tensor(layers[k].name + ".weight.grad", layers[k].weight_bytes, backward[k], {step},
             tensor_role::gradient);
    b.tensor(layers[k].name + ".momentum", layers[k].weight_bytes, std::nullopt, {step},
             tensor_role::optimizer_state);
  }
  b.other_bytes(1u << 20);
  return b.get();
}

/// conv-relu(-pool) blocks whose feature maps shrink: VGG's shape in miniature.
inline access_sequence small_vgg(std::size_t blocks = 4, std::size_t base_bytes = 8u << 20) {
  std::vector<layer_spec> layers;
  std::size_t bytes = base_bytes;
  for (std::size_t b = 0; b < blocks; ++b) {
    const auto id = std::to_string(b + 1);
    layers.push_back({"conv" + id, op_kind::convolution, bytes, 2e-3, 256u << 10});
    layers.push_back({"relu" + id, op_kind::elementwise, bytes, 2e-4, 0});
    layers.push_back({"conv" + id + "b", op_kind::convolution, bytes, 2e-3, 256u << 10});
    layers.push_back({"bn" + id, op_kind::normalization, bytes, 3e-4, 4u << 10});
    layers.push_back({"pool" + id, op_kind::pooling, bytes / 2, 2e-4, 0});
    bytes /= 2;
  }
  layers.push_back({"fc", op_kind::matmul, 64u << 10, 5e-4, 1u << 20});
  return cnn_sequence(layers, base_bytes / 2, "small-vgg");
}

}  // namespace tandem::footprint::testing
