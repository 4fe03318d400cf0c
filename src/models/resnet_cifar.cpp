// CIFAR ResNet (He et al. 2016, section 4.2): a 3x3 stem of 16 channels, three stages of n basic
// blocks with 16, 32 and 64 channels (the last two halve the side), global average pooling and
// a linear classifier; depth = 6n + 2. Shortcuts that change the shape subsample and pad the
// new channels with zeros (the paper's option A), so resnet20 has the paper's 0.27M parameters.

#include "layers.hpp"
#include "networks.hpp"

namespace tandem::models::detail {
namespace {

class basic_block final : public torch::nn::Module {
 public:
  basic_block(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv1_(register_module("conv1", conv(in, out, 3, stride))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", conv(out, out, 3))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(out))),
        stride_(stride),
        extra_channels_(out - in) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    return torch::relu(y + shortcut(x));
  }

 private:
  torch::Tensor shortcut(const torch::Tensor& x) const {
    if (stride_ == 1 && extra_channels_ == 0) return x;
    auto subsampled = x.slice(2, 0, x.size(2), stride_).slice(3, 0, x.size(3), stride_);
    // Pads dimension 1 (channels): the pad list runs from the last dimension backwards.
    const std::int64_t before = extra_channels_ / 2;
    return torch::nn::functional::pad(
        subsampled,
        torch::nn::functional::PadFuncOptions({0, 0, 0, 0, before, extra_channels_ - before}));
  }

  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  std::int64_t stride_;
  std::int64_t extra_channels_;
};

class resnet_cifar final : public network {
 public:
  resnet_cifar(const model_options& options, std::int64_t depth) {
    const std::int64_t blocks = (depth - 2) / 6;
    std::int64_t in = scaled(16, options.width_multiplier);
    stem_ = register_module("stem", conv(options.channels, in, 3));
    stem_bn_ = register_module("stem_bn", torch::nn::BatchNorm2d(in));
    std::int64_t side = options.image_side;
    for (std::int64_t stage = 0; stage < 3; ++stage) {
      const std::int64_t out = scaled(16 << stage, options.width_multiplier);
      for (std::int64_t i = 0; i < blocks; ++i) {
        const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
        side = side_after(side, 3, stride);
        blocks_.push_back(
            register_module("stage" + std::to_string(stage + 1) + "_" + std::to_string(i),
                            std::make_shared<basic_block>(in, out, stride)));
        in = out;
      }
    }
    classifier_ = register_module("classifier", torch::nn::Linear(in, options.classes));
    min_batch_ = min_batch_for(side);
  }

  torch::Tensor forward(const torch::Tensor& input) override {
    auto x = torch::relu(stem_bn_->forward(stem_->forward(input)));
    for (const auto& block : blocks_) x = block->forward(x);
    return classifier_->forward(x.mean({2, 3}));
  }

  [[nodiscard]] std::int64_t min_batch_size() const override { return min_batch_; }

 private:
  torch::nn::Conv2d stem_{nullptr};
  torch::nn::BatchNorm2d stem_bn_{nullptr};
  std::vector<std::shared_ptr<basic_block>> blocks_;
  torch::nn::Linear classifier_{nullptr};
  std::int64_t min_batch_ = 1;
};

}  // namespace

std::shared_ptr<network> make_resnet_cifar(const model_options& options, std::int64_t depth) {
  return std::make_shared<resnet_cifar>(options, depth);
}

}  // namespace tandem::models::detail
