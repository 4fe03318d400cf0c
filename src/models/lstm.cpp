// lstm: a language model (embedding, a stack of LSTM layers, a projection to the vocabulary)
// predicting the next token at every position. It stands in for GNMT and RHN: recurrent
// networks whose activations grow with the sequence length rather than the image size.

#include "networks.hpp"

namespace tandem::models::detail {
namespace {

class lstm_language_model final : public network {
 public:
  explicit lstm_language_model(const model_options& options)
      : embedding_(
            register_module("embedding", torch::nn::Embedding(options.vocabulary, options.hidden))),
        lstm_(register_module("lstm",
                              torch::nn::LSTM(torch::nn::LSTMOptions(options.hidden, options.hidden)
                                                  .num_layers(options.layers)
                                                  .batch_first(true)))),
        projection_(
            register_module("projection", torch::nn::Linear(options.hidden, options.vocabulary))) {}

  /// [batch, length] token ids -> [batch, length, vocabulary] logits.
  torch::Tensor forward(const torch::Tensor& input) override {
    auto states = std::get<0>(lstm_->forward(embedding_->forward(input)));
    return projection_->forward(states);
  }

 private:
  torch::nn::Embedding embedding_;
  torch::nn::LSTM lstm_;
  torch::nn::Linear projection_;
};

}  // namespace

std::shared_ptr<network> make_lstm(const model_options& options) {
  return std::make_shared<lstm_language_model>(options);
}

}  // namespace tandem::models::detail
