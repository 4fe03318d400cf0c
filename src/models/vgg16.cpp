// VGG-16 with batch norm (Simonyan & Zisserman 2015; torchvision's vgg16_bn features): thirteen
// 3x3 convolutions in five blocks, each block ending in a 2x2 max pool. The classifier is sized
// to the image: the last map is (side / 32)^2 x 512, followed by two hidden layers of `hidden`:
// by default 512 (as the CIFAR variants do; default_options), 4096 for ImageNet's, which alone
// would hold 120M parameters. The simulator's vgg16 reads the same option.

#include "layers.hpp"
#include "networks.hpp"
#include "tandem/common/error.hpp"

namespace tandem::models::detail {
namespace {

constexpr std::int64_t pool_marker = 0;
constexpr std::int64_t layout[] = {64,  64,          pool_marker, 128,         128, pool_marker,
                                   256, 256,         256,         pool_marker, 512, 512,
                                   512, pool_marker, 512,         512,         512, pool_marker};

class vgg16 final : public network {
 public:
  explicit vgg16(const model_options& options) {
    const double w = options.width_multiplier;
    std::int64_t in = options.channels;
    std::int64_t side = options.image_side;
    for (const std::int64_t channels : layout) {
      if (channels == pool_marker) {
        features_->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
        side /= 2;
        continue;
      }
      const std::int64_t out = scaled(channels, w);
      features_->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)));
      features_->push_back(torch::nn::BatchNorm2d(out));
      features_->push_back(torch::nn::ReLU());
      in = out;
    }
    const std::int64_t hidden = scaled(options.hidden, w);
    classifier_->push_back(torch::nn::Linear(in * side * side, hidden));
    classifier_->push_back(torch::nn::ReLU());
    classifier_->push_back(torch::nn::Linear(hidden, hidden));
    classifier_->push_back(torch::nn::ReLU());
    classifier_->push_back(torch::nn::Linear(hidden, options.classes));
    register_module("features", features_);
    register_module("classifier", classifier_);
  }

  torch::Tensor forward(const torch::Tensor& input) override {
    return classifier_->forward(features_->forward(input).flatten(1));
  }

 private:
  torch::nn::Sequential features_;
  torch::nn::Sequential classifier_;
};

}  // namespace

std::shared_ptr<network> make_vgg16(const model_options& options) {
  TANDEM_EXPECTS(options.image_side % 32 == 0, config_error,
                 "vgg16 halves the image five times, so image_side must be a multiple of 32 "
                 "(32, 64, 224, ...), not " +
                     std::to_string(options.image_side));
  return std::make_shared<vgg16>(options);
}

}  // namespace tandem::models::detail
