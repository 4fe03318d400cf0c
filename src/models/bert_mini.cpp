// bert_mini: a BERT-style Transformer encoder (token and learned position embeddings, layer
// norm, `layers` post-norm encoder layers with `heads` heads and a 4x feed-forward, GELU) with a
// head predicting the vocabulary at every position, trained on masked tokens. Dropout is off so
// that runs are deterministic. libtorch's encoder takes [length, batch, hidden].

#include "networks.hpp"
#include "tandem/common/error.hpp"

namespace tandem::models::detail {
namespace {

torch::nn::TransformerEncoderOptions encoder_options(const model_options& options) {
  auto layer = torch::nn::TransformerEncoderLayerOptions(options.hidden, options.heads)
                   .dim_feedforward(4 * options.hidden)
                   .dropout(0.0)
                   .activation(torch::kGELU);
  return torch::nn::TransformerEncoderOptions(layer, options.layers);
}

class bert_mini final : public network {
 public:
  explicit bert_mini(const model_options& options)
      : max_length_(options.sequence_length),
        // One extra token id: the mask token (id = vocabulary).
        tokens_(register_module("tokens",
                                torch::nn::Embedding(options.vocabulary + 1, options.hidden))),
        positions_(register_module("positions",
                                   torch::nn::Embedding(options.sequence_length, options.hidden))),
        norm_(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions(
                                          std::vector<std::int64_t>{options.hidden})))),
        encoder_(
            register_module("encoder", torch::nn::TransformerEncoder(encoder_options(options)))),
        head_(register_module("head", torch::nn::Linear(options.hidden, options.vocabulary))) {}

  /// [batch, length] token ids -> [batch, length, vocabulary] logits.
  torch::Tensor forward(const torch::Tensor& input) override {
    const std::int64_t length = input.size(1);
    TANDEM_EXPECTS(length <= max_length_, usage_error,
                   "bert_mini was built for sequences of at most " + std::to_string(max_length_) +
                       " tokens but got " + std::to_string(length) +
                       "; raise model_options::sequence_length");
    const auto where =
        torch::arange(length, torch::TensorOptions(torch::kLong).device(input.device()));
    auto x = norm_->forward(tokens_->forward(input) + positions_->forward(where));
    x = encoder_->forward(x.transpose(0, 1)).transpose(0, 1);
    return head_->forward(x);
  }

 private:
  std::int64_t max_length_;
  torch::nn::Embedding tokens_;
  torch::nn::Embedding positions_;
  torch::nn::LayerNorm norm_;
  torch::nn::TransformerEncoder encoder_;
  torch::nn::Linear head_;
};

}  // namespace

std::shared_ptr<network> make_bert_mini(const model_options& options) {
  TANDEM_EXPECTS(options.hidden % options.heads == 0, config_error,
                 "bert_mini splits hidden = " + std::to_string(options.hidden) +
                     " across heads = " + std::to_string(options.heads) +
                     ", so heads must divide hidden; change one of them");
  return std::make_shared<bert_mini>(options);
}

}  // namespace tandem::models::detail
