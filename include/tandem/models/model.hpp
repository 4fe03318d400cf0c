#pragma once
// A model of the zoo: a libtorch network plus the synthetic task it trains on.
//
// The zoo stands in for the papers' workloads (ResNet, VGG, MobileNetV2, GNMT/RHN, BERT), so
// what matters is a realistic memory profile and a loss that really falls: every task is
// learnable (a fixed random "teacher" decides the targets), so a job that trains correctly can
// be told from one that does not. Everything is deterministic: the network's initial weights
// and the task's teacher come from `model_options::seed`, each batch from the seed passed to
// `make_batch`.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tandem::models {

/// Options of every model; each architecture reads the fields it needs and ignores the rest.
/// `make_model` rejects values an architecture cannot take with a config_error.
struct model_options {
  // Images (resnet*, vgg16, mobilenetv2, mlp): inputs are [batch, channels, side, side].
  std::int64_t image_side = 32;  ///< height = width of the synthetic images
  std::int64_t channels = 3;     ///< colour planes of the images
  std::int64_t classes = 10;     ///< classes of the image task (the classifier's outputs)

  // Token sequences (lstm, bert_mini): inputs are [batch, sequence_length] token ids.
  std::int64_t sequence_length = 32;  ///< tokens per sequence
  std::int64_t vocabulary = 1000;     ///< distinct tokens (the output layer's width)

  // Sizes of the layers.
  std::int64_t hidden = 128;      ///< mlp/lstm/bert_mini width (BERT-mini proper: 256);
                                  ///< vgg16's classifier (default_options: 512)
  std::int64_t layers = 2;        ///< mlp hidden layers, lstm layers, bert_mini encoder layers
  std::int64_t heads = 2;         ///< bert_mini attention heads; must divide `hidden`
  std::int64_t depth = 0;         ///< "resnet": 20, 56, 110 or 50; "resnet56" etc.: 0 or 56
  double width_multiplier = 1.0;  ///< scales the channels of resnet*, vgg16, mobilenetv2

  std::uint64_t seed = 0;  ///< initial weights and the task's fixed teacher
};

/// One training batch: `forward(input)` is compared with `target` by `loss`.
struct batch {
  torch::Tensor input;
  torch::Tensor target;
};

/// The layers of a model. Architectures derive from it; `min_batch_size` is 2 where a batch norm
/// sees a 1x1 map (it needs more than one value per channel in training).
class network : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  [[nodiscard]] virtual std::int64_t min_batch_size() const { return 1; }
};

/// What a model learns: synthetic batches with a fixed teacher, and the loss against them.
class task {
 public:
  virtual ~task() = default;
  /// A batch on the CPU, the same for the same (batch_size, seed).
  [[nodiscard]] virtual batch make_batch(std::int64_t batch_size, std::uint64_t seed) const = 0;
  [[nodiscard]] virtual torch::Tensor loss(const torch::Tensor& output,
                                           const torch::Tensor& target) const = 0;
};

/// A network and its task under a name. Made by `make_model` (zoo.hpp).
class model {
 public:
  model(std::string name, model_options options, std::shared_ptr<network> layers,
        std::unique_ptr<task> objective);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const model_options& options() const { return options_; }

  torch::Tensor forward(const torch::Tensor& input);
  /// Scalar loss of `output` (from forward) against `target` (from make_batch).
  [[nodiscard]] torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& target) const;

  /// A synthetic batch on the model's device; throws config_error for a batch size the
  /// architecture cannot train on (below `min_batch_size`).
  [[nodiscard]] batch make_batch(std::int64_t batch_size, std::uint64_t seed) const;
  [[nodiscard]] std::int64_t min_batch_size() const { return network_->min_batch_size(); }

  [[nodiscard]] std::vector<torch::Tensor> parameters() const;
  [[nodiscard]] std::int64_t parameter_count() const;

  /// The underlying module: train()/eval(), buffers, named parameters.
  [[nodiscard]] torch::nn::Module& module() { return *network_; }
  /// Moves the weights; later batches are made on `device` too.
  void to(const torch::Device& device);
  [[nodiscard]] torch::Device device() const { return device_; }

 private:
  std::string name_;
  model_options options_;
  std::shared_ptr<network> network_;
  std::unique_ptr<task> task_;
  torch::Device device_{torch::kCPU};
};

}  // namespace tandem::models
