// ResNet-50 (He et al. 2016) in its ImageNet layout: a 7x7 stride-2 stem and a max pool, four
// stages of 3, 4, 6 and 3 bottleneck blocks (1x1 reduce, 3x3, 1x1 expand by 4) of widths 64 to
// 512, global average pooling and a linear classifier. The stride sits on the 3x3 convolution
// (torchvision's "v1.5"). It runs at any image side; at 32 the last stage sees a 1x1 map.

#include "layers.hpp"
#include "networks.hpp"

namespace tandem::models::detail {
namespace {

constexpr std::int64_t expansion = 4;

class bottleneck final : public torch::nn::Module {
 public:
  bottleneck(std::int64_t in, std::int64_t width, std::int64_t stride)
      : reduce_(register_module("reduce", conv(in, width, 1))),
        reduce_bn_(register_module("reduce_bn", torch::nn::BatchNorm2d(width))),
        spatial_(register_module("spatial", conv(width, width, 3, stride))),
        spatial_bn_(register_module("spatial_bn", torch::nn::BatchNorm2d(width))),
        expand_(register_module("expand", conv(width, width * expansion, 1))),
        expand_bn_(register_module("expand_bn", torch::nn::BatchNorm2d(width * expansion))) {
    if (stride != 1 || in != width * expansion) {
      projection_ = register_module("projection", conv(in, width * expansion, 1, stride));
      projection_bn_ = register_module("projection_bn", torch::nn::BatchNorm2d(width * expansion));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(reduce_bn_->forward(reduce_->forward(x)));
    y = torch::relu(spatial_bn_->forward(spatial_->forward(y)));
    y = expand_bn_->forward(expand_->forward(y));
    const auto shortcut = projection_ ? projection_bn_->forward(projection_->forward(x)) : x;
    return torch::relu(y + shortcut);
  }

 private:
  torch::nn::Conv2d reduce_;
  torch::nn::BatchNorm2d reduce_bn_;
  torch::nn::Conv2d spatial_;
  torch::nn::BatchNorm2d spatial_bn_;
  torch::nn::Conv2d expand_;
  torch::nn::BatchNorm2d expand_bn_;
  torch::nn::Conv2d projection_{nullptr};
  torch::nn::BatchNorm2d projection_bn_{nullptr};
};

class resnet50 final : public network {
 public:
  explicit resnet50(const model_options& options) {
    const double w = options.width_multiplier;
    std::int64_t in = scaled(64, w);
    stem_ = register_module("stem", conv(options.channels, in, 7, 2));
    stem_bn_ = register_module("stem_bn", torch::nn::BatchNorm2d(in));
    pool_ = register_module(
        "pool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1)));
    std::int64_t side = side_after(side_after(options.image_side, 7, 2), 3, 2);
    const std::int64_t blocks_per_stage[] = {3, 4, 6, 3};
    for (std::int64_t stage = 0; stage < 4; ++stage) {
      const std::int64_t width = scaled(64 << stage, w);
      for (std::int64_t i = 0; i < blocks_per_stage[stage]; ++i) {
        const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
        side = side_after(side, 3, stride);
        blocks_.push_back(
            register_module("stage" + std::to_string(stage + 1) + "_" + std::to_string(i),
                            std::make_shared<bottleneck>(in, width, stride)));
        in = width * expansion;
      }
    }
    classifier_ = register_module("classifier", torch::nn::Linear(in, options.classes));
    min_batch_ = min_batch_for(side);
  }

  torch::Tensor forward(const torch::Tensor& input) override {
    auto x = pool_->forward(torch::relu(stem_bn_->forward(stem_->forward(input))));
    for (const auto& block : blocks_) x = block->forward(x);
    return classifier_->forward(x.mean({2, 3}));
  }

  [[nodiscard]] std::int64_t min_batch_size() const override { return min_batch_; }

 private:
  torch::nn::Conv2d stem_{nullptr};
  torch::nn::BatchNorm2d stem_bn_{nullptr};
  torch::nn::MaxPool2d pool_{nullptr};
  std::vector<std::shared_ptr<bottleneck>> blocks_;
  torch::nn::Linear classifier_{nullptr};
  std::int64_t min_batch_ = 1;
};

}  // namespace

std::shared_ptr<network> make_resnet50(const model_options& options) {
  return std::make_shared<resnet50>(options);
}

}  // namespace tandem::models::detail
