// mlp: flattened image -> `layers` x (Linear(hidden) + ReLU) -> Linear(classes). The smallest
// model of the zoo, for fast tests.

#include "networks.hpp"

namespace tandem::models::detail {
namespace {

class mlp final : public network {
 public:
  explicit mlp(const model_options& options) {
    std::int64_t width = options.channels * options.image_side * options.image_side;
    for (std::int64_t i = 0; i < options.layers; ++i) {
      layers_->push_back(torch::nn::Linear(width, options.hidden));
      layers_->push_back(torch::nn::ReLU());
      width = options.hidden;
    }
    layers_->push_back(torch::nn::Linear(width, options.classes));
    register_module("layers", layers_);
  }

  torch::Tensor forward(const torch::Tensor& input) override {
    return layers_->forward(input.flatten(1));
  }

 private:
  torch::nn::Sequential layers_;
};

}  // namespace

std::shared_ptr<network> make_mlp(const model_options& options) {
  return std::make_shared<mlp>(options);
}

}  // namespace tandem::models::detail
