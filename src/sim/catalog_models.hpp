#pragma once
// The catalogue's models, one builder each (catalog_*.cpp). Options reach a builder checked by
// the registry (catalog_registry.cpp): every option the model reads is present and in range.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "catalog_graph.hpp"

namespace tandem::sim::catalog {

/// A validated request: the batch and every option the model reads.
class model_args {
 public:
  model_args(std::int64_t batch, std::map<std::string, double> values)
      : batch_(batch), values_(std::move(values)) {}

  [[nodiscard]] std::int64_t batch() const { return batch_; }
  [[nodiscard]] double real(const std::string& name) const;
  [[nodiscard]] std::int64_t integer(const std::string& name) const;
  [[nodiscard]] const std::map<std::string, double>& values() const { return values_; }

 private:
  std::int64_t batch_;
  std::map<std::string, double> values_;
};

// The zoo's models (src/models), same architectures and defaults.
network build_resnet_cifar(const model_args& args, std::int64_t depth);
network build_resnet50(const model_args& args);
network build_vgg16(const model_args& args);
network build_mobilenetv2(const model_args& args);
network build_mlp(const model_args& args);
network build_lstm(const model_args& args);
network build_bert_mini(const model_args& args);

// The papers' models.
network build_inception_v3(const model_args& args);
network build_plain20(const model_args& args);
network build_squeezenet(const model_args& args);
network build_nasnet(const model_args& args);
network build_bert_base(const model_args& args);
network build_gnmt(const model_args& args);
network build_rhn(const model_args& args);
network build_tacotron(const model_args& args);

}  // namespace tandem::sim::catalog
