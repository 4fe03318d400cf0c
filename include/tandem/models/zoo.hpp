#pragma once
// The model zoo: every model a job can name, built by name.
//
//   resnet20, resnet56, resnet110  CIFAR ResNets (basic blocks, 16/32/64 channels)
//   resnet50                       ImageNet ResNet-50 (bottleneck blocks), any image side >= 32
//   resnet                         the ResNet of `model_options::depth` (20, 56, 110 or 50)
//   vgg16                          VGG-16 with batch norm, classifier sized to the image side
//   mobilenetv2                    MobileNetV2 (inverted residuals)
//   mlp                            a small multilayer perceptron, for fast tests
//   lstm                           LSTM language model (stand-in for GNMT and RHN)
//   bert_mini                      Transformer encoder trained on masked tokens
//
// Image models train on prototype images, sequence models on a fixed Markov chain of tokens;
// see model.hpp.

#include <memory>
#include <string>
#include <vector>

#include "tandem/models/model.hpp"

namespace tandem::models {

/// The names `make_model` accepts, in the order listed above.
[[nodiscard]] std::vector<std::string> model_names();

/// The model_options fields the model `name` reads (their names in workload files), from the
/// option table shared with the simulator (option_ranges.hpp); empty for an unknown model.
[[nodiscard]] std::vector<std::string> model_option_names(const std::string& name);

/// The options `name` takes when a workload leaves them out (the option table's defaults: as
/// model_options' own, except vgg16's classifier, 512 wide rather than hidden's 128).
[[nodiscard]] model_options default_options(const std::string& name);

/// Sets the field of `options` that a workload calls `option` (one of model_option_names) to
/// `value`; the option table has checked it.
void set_option(model_options& options, const std::string& option, double value);

/// Throws what make_model would for bad options (the option table's ranges and rules), without
/// building anything; only what the layers themselves find (a batch too small for a batch
/// norm) remains for training.
void check_model_options(const std::string& name, const model_options& options);

/// Builds the model `name` with freshly initialised weights (from `options.seed`). Throws
/// config_error naming the problem for an unknown name (listing the known ones) and for options
/// the architecture cannot take.
[[nodiscard]] std::unique_ptr<model> make_model(const std::string& name,
                                                const model_options& options);

}  // namespace tandem::models
