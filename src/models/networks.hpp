#pragma once
// The architectures of the zoo (one .cpp each) and the tasks they train on. Private to the zoo:
// callers go through make_model. Options reach here already checked by the zoo; each factory
// checks only what is particular to its architecture.

#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>
#include <memory>

#include "tandem/models/model.hpp"

namespace tandem::models::detail {

std::shared_ptr<network> make_mlp(const model_options& options);
/// CIFAR ResNet of depth 6n+2 with basic blocks (He et al. 2016, section 4.2).
std::shared_ptr<network> make_resnet_cifar(const model_options& options, std::int64_t depth);
/// ImageNet ResNet-50 with bottleneck blocks.
std::shared_ptr<network> make_resnet50(const model_options& options);
std::shared_ptr<network> make_vgg16(const model_options& options);
std::shared_ptr<network> make_mobilenetv2(const model_options& options);
std::shared_ptr<network> make_lstm(const model_options& options);
std::shared_ptr<network> make_bert_mini(const model_options& options);

/// Images of `options.classes` classes: a fixed smooth prototype per class, scaled and noised.
std::unique_ptr<task> make_image_task(const model_options& options);
/// Sequences from a fixed Markov chain; the target is the next token at every position.
std::unique_ptr<task> make_next_token_task(const model_options& options);
/// The same sequences with some tokens replaced by a mask token (id = vocabulary); the target
/// is the hidden token at masked positions and `ignored_target` elsewhere.
std::unique_ptr<task> make_masked_token_task(const model_options& options);
inline constexpr std::int64_t ignored_target = -100;  // cross_entropy's default ignore_index

/// A CPU generator for `seed` on one of several streams, so that the task's teacher and the
/// batches drawn with the same number differ (splitmix64's finaliser mixes the two).
inline at::Generator generator_for(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return at::detail::createCPUGenerator(z ^ (z >> 31));
}

}  // namespace tandem::models::detail
