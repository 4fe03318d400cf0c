#pragma once
// Optimizers a job can name: "sgd" (momentum 0.9) and "adam".

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace tandem::models {

/// The names `make_optimizer` accepts.
[[nodiscard]] std::vector<std::string> optimizer_names();

/// Tensors of state the optimizer `name` keeps per parameter (sgd's momentum buffer: 1; adam's
/// two moments: 2). Throws config_error for an unknown name.
[[nodiscard]] int optimizer_state_tensors(const std::string& name);

/// An optimizer over `params`. Throws config_error for an unknown name or a learning rate that
/// is not a positive finite number.
[[nodiscard]] std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const std::string& name, std::vector<torch::Tensor> params, double learning_rate);

}  // namespace tandem::models
