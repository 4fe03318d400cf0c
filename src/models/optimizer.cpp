// Optimizers by name, with the settings the papers' jobs use.

#include "tandem/models/optimizer.hpp"

#include <cmath>

#include "tandem/common/error.hpp"

namespace tandem::models {

std::vector<std::string> optimizer_names() {
  return {"sgd", "adam"};
}

int optimizer_state_tensors(const std::string& name) {
  if (name == "sgd") return 1;   // the momentum buffer
  if (name == "adam") return 2;  // the first and second moments
  TANDEM_FAIL(config_error, "unknown optimizer '" + name + "'; known optimizers: sgd, adam");
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name,
                                                        std::vector<torch::Tensor> params,
                                                        double learning_rate) {
  TANDEM_EXPECTS(std::isfinite(learning_rate) && learning_rate > 0, config_error,
                 "learning_rate must be a positive number, not " + std::to_string(learning_rate) +
                     "; 0.01 to 0.1 suits sgd, 1e-4 to 1e-3 adam");
  if (name == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        std::move(params), torch::optim::SGDOptions(learning_rate).momentum(0.9));
  }
  if (name == "adam") {
    return std::make_unique<torch::optim::Adam>(std::move(params),
                                                torch::optim::AdamOptions(learning_rate));
  }
  TANDEM_FAIL(config_error, "unknown optimizer '" + name + "'; known optimizers: sgd, adam");
}

}  // namespace tandem::models
