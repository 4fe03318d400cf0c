// GNMT (Wu et al. 2016) as NVIDIA's GNMT v2 trains it (DeepLearningExamples,
// PyTorch/Translation/GNMT): embeddings shared by encoder and decoder (vocabulary 32,000 BPE
// tokens), an encoder of `layers` LSTM layers of width `hidden` (the first bidirectional, the
// second reading both directions, residual connections from the third), normalised Bahdanau
// attention fed by the decoder's first layer, a decoder of `layers` LSTM layers whose later ones
// read the attention context too, a classifier over the vocabulary; dropout 0.2 on every LSTM
// input. Source and target sentences are both `sequence_length` tokens (padded batches).
//
// `framework` 1 lowers the same network as TensorFlow 1.x's GNMT (tensorflow/nmt, which Zico
// trained on TF 1.13) issues it: every LSTM step of every direction as its own graph ops (the
// cell's 14 element-wise and GEMM ops and the while loop's control flow and stacks), and the
// attention once per decoder step. Arithmetic and memory are unchanged; the operations the host
// issues are counted in docs/sim-models.md, "Frameworks".

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
  bool tensorflow = false;
};

/// TensorFlow 1.x's operations per LSTM step and direction (BasicLSTMCell in a dynamic_rnn
/// while loop). Forward: concat, MatMul, BiasAdd, split, the forget bias's add, three sigmoids,
/// two tanhs, three muls, an add (14 kernels) and the loop's Enter/Merge/Switch/Identity/
/// NextIteration/Less/Add and TensorArray read and write (10 host operations). Backward: about
/// two gradient ops per forward op (28) and the loop's control flow with a stack push and pop
/// per saved tensor (20).
constexpr int tf_lstm_forward_ops = 24;
constexpr int tf_lstm_backward_ops = 48;
/// TensorFlow 1.x's AttentionWrapper with normalised Bahdanau attention, per decoder step: the
/// query's projection, the broadcast add, tanh, the weight norm (5), the score's multiply and
/// sum, the mask, softmax, the context's expand, matmul and squeeze, the concat for the next
/// layer and the loop's bookkeeping (about 20); backward about twice that.
constexpr int tf_attention_forward_ops = 20;
constexpr int tf_attention_backward_ops = 40;

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
  if (spec.tensorflow) {
    r.forward_ops_per_step = tf_lstm_forward_ops;
    r.backward_ops_per_step = tf_lstm_backward_ops;
  }
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
  if (spec.tensorflow) {
    // One attention per decoder step instead of all steps at once: same arithmetic, more ops.
    const auto steps = static_cast<int>(spec.length);
    net.layers.back().forward.kernels = tf_attention_forward_ops * steps;
    net.layers.back().backward.kernels = tf_attention_backward_ops * steps;
  }
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
  spec.tensorflow = args.integer("framework") == 1;
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
