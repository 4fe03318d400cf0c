// model: a network and its task under a name.

#include "tandem/models/model.hpp"

#include <utility>

#include "tandem/common/error.hpp"

namespace tandem::models {

model::model(std::string name, model_options options, std::shared_ptr<network> layers,
             std::unique_ptr<task> objective)
    : name_(std::move(name)),
      options_(options),
      network_(std::move(layers)),
      task_(std::move(objective)) {
  TANDEM_ASSERT(network_ != nullptr && task_ != nullptr, "a model needs a network and a task");
}

torch::Tensor model::forward(const torch::Tensor& input) {
  return network_->forward(input);
}

torch::Tensor model::loss(const torch::Tensor& output, const torch::Tensor& target) const {
  return task_->loss(output, target);
}

batch model::make_batch(std::int64_t batch_size, std::uint64_t seed) const {
  const std::string why = min_batch_size() > 1
                              ? " (batch norm over its 1x1 maps needs 2 samples); raise "
                                "batch_size or image_side"
                              : "";
  TANDEM_EXPECTS(batch_size >= min_batch_size(), config_error,
                 "batch_size " + std::to_string(batch_size) + " is too small for model '" + name_ +
                     "': it needs at least " + std::to_string(min_batch_size()) + why);
  auto made = task_->make_batch(batch_size, seed);
  if (device_ != torch::Device(torch::kCPU)) {
    made.input = made.input.to(device_);
    made.target = made.target.to(device_);
  }
  return made;
}

std::vector<torch::Tensor> model::parameters() const {
  return network_->parameters();
}

std::int64_t model::parameter_count() const {
  std::int64_t count = 0;
  for (const auto& parameter : network_->parameters()) count += parameter.numel();
  return count;
}

void model::to(const torch::Device& device) {
  network_->to(device);
  device_ = device;
}

}  // namespace tandem::models
