// The sequence tasks: tokens follow a fixed random Markov chain in which each token has one
// likely successor (taken with probability `follow`) and otherwise any token; the successors
// form a single random ring through the vocabulary. A model that learns the ring predicts most
// tokens, so the loss falls from ln(vocabulary) toward about 0.1 * ln(vocabulary) + 0.3.

#include <vector>

#include "networks.hpp"

namespace tandem::models::detail {
namespace {

constexpr std::uint64_t teacher_stream = 3;
constexpr std::uint64_t batch_stream = 4;
constexpr double follow = 0.9;
constexpr double mask_rate = 0.15;  // BERT's

class markov_chain {
 public:
  explicit markov_chain(const model_options& options) : vocabulary_(options.vocabulary) {
    // Tokens sit on a random ring; a token's likely successor is the next one on the ring.
    auto generator = generator_for(options.seed, teacher_stream);
    const auto ring = torch::randperm(vocabulary_, generator);
    successor_ = torch::empty_like(ring).scatter_(0, ring, ring.roll(-1));
  }

  /// [batch_size, length] token ids.
  torch::Tensor sample(std::int64_t batch_size, std::int64_t length,
                       at::Generator& generator) const {
    std::vector<torch::Tensor> steps;
    steps.reserve(static_cast<std::size_t>(length));
    auto token = torch::randint(vocabulary_, {batch_size}, generator);
    for (std::int64_t t = 0; t < length; ++t) {
      steps.push_back(token);
      const auto follows = torch::rand({batch_size}, generator) < follow;
      const auto any = torch::randint(vocabulary_, {batch_size}, generator);
      token = torch::where(follows, successor_.index_select(0, token), any);
    }
    return torch::stack(steps, 1);
  }

  [[nodiscard]] std::int64_t vocabulary() const { return vocabulary_; }

 private:
  std::int64_t vocabulary_;
  torch::Tensor successor_;  // [vocabulary]: the likely next token of each token
};

/// Cross entropy over [batch, length, vocabulary] logits and [batch, length] targets.
torch::Tensor token_loss(const torch::Tensor& output, const torch::Tensor& target) {
  return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(-1)}),
                                              target.reshape({-1}));
}

class next_token_task final : public task {
 public:
  explicit next_token_task(const model_options& options)
      : chain_(options), length_(options.sequence_length) {}

  batch make_batch(std::int64_t batch_size, std::uint64_t seed) const override {
    auto generator = generator_for(seed, batch_stream);
    const auto tokens = chain_.sample(batch_size, length_ + 1, generator);
    return {tokens.slice(1, 0, length_).contiguous(), tokens.slice(1, 1).contiguous()};
  }

  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& target) const override {
    return token_loss(output, target);
  }

 private:
  markov_chain chain_;
  std::int64_t length_;
};

class masked_token_task final : public task {
 public:
  explicit masked_token_task(const model_options& options)
      : chain_(options), length_(options.sequence_length) {}

  batch make_batch(std::int64_t batch_size, std::uint64_t seed) const override {
    auto generator = generator_for(seed, batch_stream);
    const auto tokens = chain_.sample(batch_size, length_, generator);
    auto masked = torch::rand({batch_size, length_}, generator) < mask_rate;
    // At least one masked token per sequence, so that the loss is never over nothing.
    masked.scatter_(1, torch::randint(length_, {batch_size, 1}, generator), true);
    return {tokens.masked_fill(masked, chain_.vocabulary()),
            tokens.masked_fill(masked.logical_not(), ignored_target)};
  }

  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& target) const override {
    return token_loss(output, target);
  }

 private:
  markov_chain chain_;
  std::int64_t length_;
};

}  // namespace

std::unique_ptr<task> make_next_token_task(const model_options& options) {
  return std::make_unique<next_token_task>(options);
}

std::unique_ptr<task> make_masked_token_task(const model_options& options) {
  return std::make_unique<masked_token_task>(options);
}

}  // namespace tandem::models::detail
