// GNMT (Wu et al. 2016) as NVIDIA's GNMT v2 trains it (DeepLearningExamples,
// PyTorch/Translation/GNMT): embeddings shared by encoder and decoder (vocabulary 32,000 BPE
// tokens), an encoder of `layers` LSTM layers of width `hidden` (the first bidirectional, the
// second reading both directions, residual connections from the third), normalised Bahdanau
// attention fed by the decoder's first layer, a decoder of `layers` LSTM layers whose later ones
// read the attention context too, a classifier over the vocabulary; dropout 0.2 on every LSTM
// input. Source and target sentences are both `sequence_length` tokens (padded batches).

#include "catalog_attention.hpp"
#include "catalog_layers.hpp"
#include "catalog_models.hpp"
#include "catalog_recurrent.hpp"

namespace tandem::sim::catalog {
namespace {

struct stack_spec {
  std::int64_t length = 0;
  std::int64_t hidden = 0;
  std::int64_t steps_per_op = 1;
};

/// Dropout on the input, then an LSTM layer; from the third layer of a stack on, the layer's
/// input is added to its output.
void lstm_layer(network& net, const std::string& name, const stack_spec& spec, std::int64_t input,
                std::int64_t directions, bool residual) {
  dropout(net, name + ".dropout", net.batch * spec.length * input);
  recurrent_spec r;
  r.steps = spec.length;
  r.input = input;
  r.hidden = spec.hidden;
  r.directions = directions;
  r.steps_per_op = spec.steps_per_op;
  lstm(net, name, r);
  if (residual) add(net, name + ".residual", net.batch * spec.length * spec.hidden);
}

void encoder(network& net, const stack_spec& spec, std::int64_t layers) {
  const std::int64_t h = spec.hidden;
  lstm_layer(net, "encoder0", spec, h, 2, false);
  lstm_layer(net, "encoder1", spec, 2 * h, 1, false);
  for (std::int64_t i = 2; i < layers; ++i) {
    lstm_layer(net, "encoder" + std::to_string(i), spec, h, 1, true);
  }
}

void decoder(network& net, const stack_spec& spec, std::int64_t layers) {
  const std::int64_t h = spec.hidden;
  lstm_layer(net, "decoder0", spec, h, 1, false);
  additive_attention_spec attention;
  attention.queries = spec.length;
  attention.keys = spec.length;
  attention.hidden = h;
  additive_attention(net, "attention", attention);
  for (std::int64_t i = 1; i < layers; ++i) {
    const std::string name = "decoder" + std::to_string(i);
    concat(net, name + ".with_context", net.batch * spec.length * 2 * h);
    lstm_layer(net, name, spec, 2 * h, 1, i >= 2);
  }
}

}  // namespace

network build_gnmt(const model_args& args) {
  network net;
  net.batch = args.batch();
  stack_spec spec;
  spec.length = args.integer("sequence_length");
  spec.hidden = args.integer("hidden");
  const std::int64_t layers = args.integer("layers");
  const std::int64_t vocabulary = args.integer("vocabulary");
  spec.steps_per_op = steps_per_op_for(spec.length, 2 * layers);
  const std::int64_t rows = net.batch * spec.length;
  input_tokens(net, 2 * spec.length, spec.length);
  embedding(net, "encoder.embedding", rows, vocabulary, spec.hidden);
  const std::size_t table = net.last_index();
  encoder(net, spec, layers);
  embedding(net, "decoder.embedding", rows, vocabulary, spec.hidden);
  net.layers.back().parameters.clear();  // shared with the encoder's
  net.layers.back().reads_parameters_of = table;
  decoder(net, spec, layers);
  linear(net, "classifier", rows, spec.hidden, vocabulary);
  net.release_last_after_next();
  cross_entropy(net, "loss", rows, vocabulary);
  return net;
}

}  // namespace tandem::sim::catalog
