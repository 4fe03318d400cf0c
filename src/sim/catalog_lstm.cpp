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
  const std::size_t embedded = net.last_index();
  // libtorch's LSTM module makes the zero initial states h0 and c0 ([layers, batch, hidden]),
  // which the first steps keep for their backward.
  layer state;
  state.name = "initial_state";
  state.kind = op_kind::elementwise;
  state.output_bytes = layers * net.batch * hidden * fp32_bytes;  // h0
  state.saved_bytes = state.output_bytes;                         // c0
  state.forward.bytes = static_cast<double>(2 * state.output_bytes);
  state.forward.blocks = elementwise_blocks(2 * layers * net.batch * hidden);
  state.forward.kernels = 2;
  net.add(std::move(state));
  // The embedded batch is batch-first; the LSTM turns it time-major as a copy, which the first
  // layer keeps for its weight gradients, and the embedding's own output goes once copied.
  concat(net, "lstm.input_copy", rows * hidden);
  net.release_after_last(embedded);
  recurrent_spec spec;
  spec.steps = length;
  spec.input = hidden;
  spec.hidden = hidden;
  spec.steps_per_op = steps_per_op_for(length, layers);
  for (std::int64_t i = 0; i < layers; ++i) lstm(net, "lstm" + std::to_string(i), spec);
  // The LSTM's output turned batch-first again is a transposed view; the projection's matmul
  // makes it contiguous, and keeps that copy for its weight gradient (a copy whose gradient
  // passes through, as a concatenation's does).
  concat(net, "projection.input", rows * hidden);
  linear(net, "projection", rows, hidden, vocabulary);
  net.release_last_after_next();  // log_softmax keeps its own output
  cross_entropy(net, "loss", rows, vocabulary);
  return net;
}

}  // namespace tandem::sim::catalog
