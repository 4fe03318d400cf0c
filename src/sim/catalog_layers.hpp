#pragma once
// The layers the catalogue's models are made of, each appended to a network with its FLOPs,
// bytes, parallelism and memory as a PyTorch training iteration would see them (FP32, eager,
// cuDNN/cuBLAS kernels). Sizes are per batch: `net.batch` multiplies per-sample shapes.

#include <cstdint>
#include <string>

#include "catalog_graph.hpp"

namespace tandem::sim::catalog {

inline constexpr std::int64_t fp32_bytes = 4;
inline constexpr std::int64_t index_bytes = 8;  // int64 indices and labels
inline constexpr std::int64_t mask_bytes = 1;   // dropout masks are bool tensors

/// `channels` scaled by a width multiplier, at least 1 (the zoo's rounding).
[[nodiscard]] std::int64_t scaled_channels(std::int64_t channels, double multiplier);

/// Thread blocks of a GEMM with an m x n output in 64 x 64 tiles.
[[nodiscard]] double gemm_tiles(std::int64_t m, std::int64_t n);
/// Thread blocks of an elementwise kernel over `elements` (256 threads, 4 elements each).
[[nodiscard]] double elementwise_blocks(std::int64_t elements);

/// A per-sample feature map.
struct image {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  [[nodiscard]] std::int64_t elements() const { return channels * height * width; }
};

struct conv_spec {
  std::int64_t out_channels = 0;
  std::int64_t kernel_h = 1;
  std::int64_t kernel_w = 1;
  std::int64_t stride = 1;
  std::int64_t pad_h = 0;
  std::int64_t pad_w = 0;
  std::int64_t groups = 1;
  bool bias = false;
  bool input_needs_gradient = true;  ///< false for the first layer (the batch needs none)
};

/// A k x k convolution padded to keep the side ("same" padding when stride is 1).
[[nodiscard]] conv_spec square_conv(std::int64_t out_channels, std::int64_t kernel,
                                    std::int64_t stride = 1, std::int64_t groups = 1);
/// A kh x kw convolution with stride 1 and "same" padding (Inception's 1x7 and 7x1).
[[nodiscard]] conv_spec rect_conv(std::int64_t out_channels, std::int64_t kernel_h,
                                  std::int64_t kernel_w);
/// A convolution with no padding ("valid").
[[nodiscard]] conv_spec valid_conv(std::int64_t out_channels, std::int64_t kernel,
                                   std::int64_t stride = 1);

/// `spec` for the network's first layer: its input, the batch, needs no gradient.
[[nodiscard]] conv_spec first_layer(conv_spec spec);

/// Side of a map after a window of `kernel` with `stride` and `pad` (floor, as PyTorch).
[[nodiscard]] std::int64_t side_after(std::int64_t side, std::int64_t kernel, std::int64_t stride,
                                      std::int64_t pad);
/// The same rounding up (PyTorch's ceil_mode), where a last window may hang over the edge but
/// must start inside the input or its left padding. 0 where no window fits.
[[nodiscard]] std::int64_t side_after_ceil(std::int64_t side, std::int64_t kernel,
                                           std::int64_t stride, std::int64_t pad);

// The batch. Both copy it from the host and keep it (and its labels) for the whole iteration.
image input_images(network& net, image shape);
void input_tokens(network& net, std::int64_t tokens, std::int64_t targets);
void input_frames(network& net, std::int64_t tokens, std::int64_t frame_values);

image conv2d(network& net, const std::string& name, image in, const conv_spec& spec);

/// relu6: ReLU6 as libtorch makes it (hardtanh), whose backward reads its input, not its output.
enum class activation : std::uint8_t { none, relu, relu_in_place, tanh, relu6 };
/// Batch norm over `shape`, then `after`: a non-in-place activation whose backward reads its
/// output makes a second map and frees the normalised one at once (relu(bn(x)) as the zoo writes
/// it); relu6 keeps both, as a layer of its own after the batch norm.
void batch_norm(network& net, const std::string& name, image shape, activation after);

/// A convolution followed by batch norm and `after`.
image conv_bn(network& net, const std::string& name, image in, const conv_spec& spec,
              activation after);

image max_pool(network& net, const std::string& name, image in, std::int64_t kernel,
               std::int64_t stride, std::int64_t pad);
/// A max pool with ceil_mode (SqueezeNet's): sides from side_after_ceil.
image max_pool_ceil(network& net, const std::string& name, image in, std::int64_t kernel,
                    std::int64_t stride, std::int64_t pad);
image average_pool(network& net, const std::string& name, image in, std::int64_t kernel,
                   std::int64_t stride, std::int64_t pad);
/// Mean over the map: [batch, channels].
void global_average_pool(network& net, const std::string& name, image in);

struct linear_options {
  bool bias = true;
  bool input_needs_gradient = true;  ///< false when the input is the batch
  /// The layer whose weight this one uses (counted there), or no_layer for a weight of its own.
  std::size_t tied_to = no_layer;
};
[[nodiscard]] inline linear_options without_bias() {
  linear_options o;
  o.bias = false;
  return o;
}
[[nodiscard]] inline linear_options with_weight_of(std::size_t layer) {
  linear_options o;
  o.tied_to = layer;
  return o;
}
/// A linear layer on `rows` inputs (batch x positions) of `in` features.
void linear(network& net, const std::string& name, std::int64_t rows, std::int64_t in,
            std::int64_t out, linear_options options = {});

/// An activation (ReLU, GELU, tanh) over `elements`; its backward needs its output.
void activation_layer(network& net, const std::string& name, std::int64_t elements);
/// A sum of two tensors; the gradient passes through, so backward does no work.
void add(network& net, const std::string& name, std::int64_t elements);
/// Concatenation into a new tensor; its backward hands out views.
void concat(network& net, const std::string& name, std::int64_t elements);
void layer_norm(network& net, const std::string& name, std::int64_t rows, std::int64_t width);
void embedding(network& net, const std::string& name, std::int64_t rows, std::int64_t vocabulary,
               std::int64_t width);
/// Dropout: a new tensor and a one-byte mask per element kept for backward.
void dropout(network& net, const std::string& name, std::int64_t elements);
/// Softmax cross entropy of `rows` predictions over `classes`.
void cross_entropy(network& net, const std::string& name, std::int64_t rows, std::int64_t classes);
/// Mean squared error over `elements` (Tacotron's spectrogram loss).
void mse_loss(network& net, const std::string& name, std::int64_t elements);

/// Global average pooling, the linear classifier and the cross-entropy loss.
void image_classifier(network& net, image features, std::int64_t classes);

}  // namespace tandem::sim::catalog
