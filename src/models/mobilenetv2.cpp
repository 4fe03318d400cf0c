// MobileNetV2 (Sandler et al. 2018) in its ImageNet layout: a 3x3 stride-2 stem, seventeen
// inverted residual blocks (1x1 expand, 3x3 depthwise, 1x1 linear projection, a shortcut where
// the shape allows), a 1x1 convolution to 1280 channels, global average pooling and a linear
// classifier. Channel counts follow torchvision (multiples of 8 after the width multiplier).

#include <algorithm>

#include "layers.hpp"
#include "networks.hpp"

namespace tandem::models::detail {
namespace {

/// Nearest multiple of 8 to `channels` that is at least 90% of it (the paper's rounding).
std::int64_t divisible_by_8(double channels) {
  auto rounded = std::max<std::int64_t>(8, (static_cast<std::int64_t>(channels + 4.0) / 8) * 8);
  if (static_cast<double>(rounded) < 0.9 * channels) rounded += 8;
  return rounded;
}

void add_conv_bn(torch::nn::Sequential& layers, std::int64_t in, std::int64_t out,
                 std::int64_t kernel, std::int64_t stride, std::int64_t groups, bool activate) {
  layers->push_back(conv(in, out, kernel, stride, groups));
  layers->push_back(torch::nn::BatchNorm2d(out));
  if (activate) layers->push_back(torch::nn::ReLU6());
}

class inverted_residual final : public torch::nn::Module {
 public:
  inverted_residual(std::int64_t in, std::int64_t out, std::int64_t stride, std::int64_t expand)
      : residual_(stride == 1 && in == out) {
    const std::int64_t hidden = in * expand;
    if (expand != 1) add_conv_bn(layers_, in, hidden, 1, 1, 1, true);
    add_conv_bn(layers_, hidden, hidden, 3, stride, hidden, true);  // depthwise
    add_conv_bn(layers_, hidden, out, 1, 1, 1, false);              // linear bottleneck
    register_module("layers", layers_);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto y = layers_->forward(x);
    return residual_ ? x + y : y;
  }

 private:
  torch::nn::Sequential layers_;
  bool residual_;
};

struct stage_spec {
  std::int64_t expand;
  std::int64_t channels;
  std::int64_t blocks;
  std::int64_t stride;
};
constexpr stage_spec stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};

class mobilenetv2 final : public network {
 public:
  explicit mobilenetv2(const model_options& options) {
    const double w = options.width_multiplier;
    std::int64_t in = divisible_by_8(32.0 * w);
    add_conv_bn(stem_, options.channels, in, 3, 2, 1, true);
    register_module("stem", stem_);
    std::int64_t side = side_after(options.image_side, 3, 2);
    std::int64_t index = 0;
    for (const auto& stage : stages) {
      const std::int64_t out = divisible_by_8(static_cast<double>(stage.channels) * w);
      for (std::int64_t i = 0; i < stage.blocks; ++i) {
        const std::int64_t stride = i == 0 ? stage.stride : 1;
        side = side_after(side, 3, stride);
        blocks_.push_back(
            register_module("block" + std::to_string(index++),
                            std::make_shared<inverted_residual>(in, out, stride, stage.expand)));
        in = out;
      }
    }
    const std::int64_t last = divisible_by_8(1280.0 * std::max(1.0, w));
    add_conv_bn(head_, in, last, 1, 1, 1, true);
    register_module("head", head_);
    classifier_ = register_module("classifier", torch::nn::Linear(last, options.classes));
    min_batch_ = min_batch_for(side);
  }

  torch::Tensor forward(const torch::Tensor& input) override {
    auto x = stem_->forward(input);
    for (const auto& block : blocks_) x = block->forward(x);
    return classifier_->forward(head_->forward(x).mean({2, 3}));
  }

  [[nodiscard]] std::int64_t min_batch_size() const override { return min_batch_; }

 private:
  torch::nn::Sequential stem_;
  std::vector<std::shared_ptr<inverted_residual>> blocks_;
  torch::nn::Sequential head_;
  torch::nn::Linear classifier_{nullptr};
  std::int64_t min_batch_ = 1;
};

}  // namespace

std::shared_ptr<network> make_mobilenetv2(const model_options& options) {
  return std::make_shared<mobilenetv2>(options);
}

}  // namespace tandem::models::detail
