// The zoo's LSTM language model (src/models/lstm.cpp): an embedding, `layers` LSTM layers of
// width `hidden`, a projection to the vocabulary at every position, cross entropy against the
// next token.

#include "catalog_layers.hpp"
#include "catalog_models.hpp"
#include "catalog_recurrent.hpp"

namespace tandem::sim::catalog {

network build_lstm(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t length = args.integer("sequence_length");
  const std::int64_t vocabulary = args.integer("vocabulary");
  const std::int64_t hidden = args.integer("hidden");
  const std::int64_t layers = args.integer("layers");
  const std::int64_t rows = net.batch * length;
  input_tokens(net, length, length);
  embedding(net, "embedding", rows, vocabulary, hidden);
  recurrent_spec spec;
  spec.steps = length;
  spec.input = hidden;
  spec.hidden = hidden;
  spec.steps_per_op = steps_per_op_for(length, layers);
  for (std::int64_t i = 0; i < layers; ++i) lstm(net, "lstm" + std::to_string(i), spec);
  linear(net, "projection", rows, hidden, vocabulary);
  net.release_last_after_next();  // log_softmax keeps its own output
  cross_entropy(net, "loss", rows, vocabulary);
  return net;
}

}  // namespace tandem::sim::catalog
