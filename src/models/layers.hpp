#pragma once
// Building blocks shared by the convolutional networks of the zoo.

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tandem::models::detail {

/// `channels` scaled by the width multiplier, at least 1.
inline std::int64_t scaled(std::int64_t channels, double multiplier) {
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(channels) * multiplier));
}

/// A square convolution with "same" padding and no bias (a batch norm follows it).
inline torch::nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel,
                              std::int64_t stride = 1, std::int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .groups(groups)
                               .bias(false));
}

/// Side of the map that `conv(.., kernel, stride)` (or a pool with the same padding) makes.
inline std::int64_t side_after(std::int64_t side, std::int64_t kernel, std::int64_t stride) {
  return (side + 2 * (kernel / 2) - kernel) / stride + 1;
}

/// Batch norm in training needs more than one value per channel: a 1x1 map needs 2 samples.
inline std::int64_t min_batch_for(std::int64_t smallest_side) {
  return smallest_side > 1 ? 1 : 2;
}

}  // namespace tandem::models::detail
