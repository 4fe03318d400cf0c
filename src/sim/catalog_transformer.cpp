// Transformer encoders: the zoo's bert_mini (src/models/bert_mini.cpp: libtorch's post-norm
// TransformerEncoderLayer, GELU, no dropout, a vocabulary head at every position; its
// MultiheadAttention makes queries, keys and values per head as new tensors) and BERT-base
// (Devlin et al. 2019) pre-training: word, position (512) and segment embeddings, post-norm
// layers with dropout 0.1, the pooler with the next-sentence head, and the masked-token head
// (dense, GELU, layer norm, the decoder tied to the word embeddings) on the masked positions
// only (15%, as BERT's max_predictions_per_seq = 20 of 128).

#include <algorithm>
#include <cmath>

#include "catalog_attention.hpp"
#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t bert_positions = 512;
constexpr double bert_mask_rate = 0.15;

struct encoder_spec {
  std::int64_t length = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 1;
  bool dropout = false;
  bool per_head_copies = false;  ///< libtorch's MultiheadAttention (self_attention_spec)
  bool tensorflow = false;       ///< as google-research/bert's modeling.py builds it in TF 1.x
};

/// Operations of google-research/bert's TF 1.x graph where they outnumber PyTorch's, forward
/// and backward (about two gradient operations per forward one). The projections: three dense
/// layers (MatMul, BiasAdd) and, for each, transpose_for_scores' reshape and transpose. The
/// scores: MatMul, the scaling Mul, the mask's expand_dims, cast, sub, mul and add, Softmax.
/// The context: MatMul, transpose, reshape. GELU as its tanh approximation: pow, mul, add, mul,
/// tanh, add, mul, mul. Layer norm, dropout and the optimizer are catalog_tensorflow.cpp's.
struct tf_ops {
  int forward;
  int backward;
};
constexpr tf_ops tf_projections{12, 24};
constexpr tf_ops tf_scores{8, 16};
constexpr tf_ops tf_context{3, 6};
constexpr tf_ops tf_gelu{8, 16};

void set_ops(layer& l, tf_ops ops) {
  l.forward.kernels = ops.forward;
  l.backward.kernels = ops.backward;
}

/// GELU, with TensorFlow's operation count where `tensorflow`.
void gelu(network& net, const std::string& name, std::int64_t elements, bool tensorflow) {
  activation_layer(net, name, elements);
  if (tensorflow) set_ops(net.layers.back(), tf_gelu);
}

/// Sets the TF 1.x operation counts of the self-attention's layers added from `first` on.
void as_tensorflow_attention(network& net, std::size_t first) {
  for (std::size_t i = first; i < net.layers.size(); ++i) {
    auto& l = net.layers[i];
    if (l.name.ends_with(".qkv")) set_ops(l, tf_projections);
    if (l.name.ends_with(".scores")) set_ops(l, tf_scores);
    if (l.name.ends_with(".context")) set_ops(l, tf_context);
  }
}

/// The sum of the embeddings from layer `first` on, which only the sum reads.
void sum_embeddings(network& net, std::size_t first, std::int64_t elements) {
  const std::size_t last = net.last_index();
  add(net, "embeddings", elements);
  for (std::size_t i = first; i <= last; ++i) net.release_after_last(i);
}

/// x = norm(x + sublayer(x)): the sublayer's last output (and its dropout) is read by the
/// addition only; the sum is the norm's input, which its backward needs.
void residual_norm(network& net, const std::string& name, const encoder_spec& spec) {
  const std::int64_t elements = net.batch * spec.length * spec.hidden;
  net.release_last_after_next();
  if (spec.dropout) {
    dropout(net, name + ".dropout", elements);
    net.release_last_after_next();
  }
  add(net, name + ".add", elements);
  layer_norm(net, name + ".norm", net.batch * spec.length, spec.hidden);
}

void encoder_layer(network& net, const std::string& name, const encoder_spec& spec) {
  const std::int64_t rows = net.batch * spec.length;
  self_attention_spec attention;
  attention.length = spec.length;
  attention.hidden = spec.hidden;
  attention.heads = spec.heads;
  attention.dropout = spec.dropout;
  attention.per_head_copies = spec.per_head_copies;
  const std::size_t first = net.layers.size();
  self_attention(net, name + ".attention", attention);
  if (spec.tensorflow) as_tensorflow_attention(net, first);
  residual_norm(net, name + ".attention", spec);
  linear(net, name + ".ffn1", rows, spec.hidden, 4 * spec.hidden);
  gelu(net, name + ".gelu", rows * 4 * spec.hidden, spec.tensorflow);
  linear(net, name + ".ffn2", rows, 4 * spec.hidden, spec.hidden);
  residual_norm(net, name + ".ffn", spec);
}

/// `zoo`: libtorch's TransformerEncoderLayer (bert_mini), without dropout; else BERT-base's.
void encoder(network& net, const model_args& args, bool zoo) {
  encoder_spec spec;
  spec.length = args.integer("sequence_length");
  spec.hidden = args.integer("hidden");
  spec.heads = args.integer("heads");
  spec.dropout = !zoo;
  spec.per_head_copies = zoo;
  spec.tensorflow = !zoo && args.integer("framework") == 1;
  for (std::int64_t i = 0; i < args.integer("layers"); ++i) {
    encoder_layer(net, "layer" + std::to_string(i), spec);
  }
}

/// BERT's next-sentence head on the first token: pooler (dense, tanh), two classes.
void next_sentence_head(network& net, std::int64_t hidden) {
  linear(net, "pooler", net.batch, hidden, hidden);
  net.release_last_after_next();
  activation_layer(net, "pooler.tanh", net.batch * hidden);
  linear(net, "next_sentence", net.batch, hidden, 2);
  net.release_last_after_next();
  cross_entropy(net, "next_sentence.loss", net.batch, 2);
}

/// BERT's masked-token head on `rows` gathered positions; the decoder's weight is the word
/// embedding's (layer `words`).
void masked_token_head(network& net, std::int64_t rows, std::int64_t hidden,
                       std::int64_t vocabulary, std::size_t words, bool tensorflow) {
  layer gather;
  gather.name = "masked_positions";
  gather.kind = op_kind::embedding;
  gather.forward.bytes = static_cast<double>(2 * rows * hidden * fp32_bytes);
  gather.forward.blocks = elementwise_blocks(rows * hidden);
  gather.forward.kernels = 1;
  gather.backward = gather.forward;
  gather.backward.kernels = 2;  // zeroes the full gradient, scatters into it
  gather.output_bytes = rows * hidden * fp32_bytes;
  gather.input_gradient_bytes = rows * hidden * fp32_bytes;
  net.add(std::move(gather));
  linear(net, "mlm.transform", rows, hidden, hidden);
  gelu(net, "mlm.gelu", rows * hidden, tensorflow);
  layer_norm(net, "mlm.norm", rows, hidden);
  linear(net, "mlm.decoder", rows, hidden, vocabulary, with_weight_of(words));
  net.release_last_after_next();
  cross_entropy(net, "mlm.loss", rows, vocabulary);
}

}  // namespace

network build_bert_mini(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t length = args.integer("sequence_length");
  const std::int64_t vocabulary = args.integer("vocabulary");
  const std::int64_t hidden = args.integer("hidden");
  const std::int64_t rows = net.batch * length;
  input_tokens(net, length, length);
  embedding(net, "tokens", rows, vocabulary + 1, hidden);  // one more id: the mask token
  const std::size_t first = net.last_index();
  embedding(net, "positions", length, length, hidden);  // shared by the batch
  sum_embeddings(net, first, rows * hidden);
  layer_norm(net, "embeddings.norm", rows, hidden);
  encoder(net, args, true);
  linear(net, "head", rows, hidden, vocabulary);
  net.release_last_after_next();
  cross_entropy(net, "loss", rows, vocabulary);
  return net;
}

network build_bert_base(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t length = args.integer("sequence_length");
  const std::int64_t vocabulary = args.integer("vocabulary");
  const std::int64_t hidden = args.integer("hidden");
  const std::int64_t rows = net.batch * length;
  const auto masked = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::ceil(bert_mask_rate * static_cast<double>(length))));
  input_tokens(net, 2 * length, masked + 1);  // token and segment ids; targets
  embedding(net, "words", rows, vocabulary, hidden);
  const std::size_t first = net.last_index();
  embedding(net, "positions", length, std::max(bert_positions, length), hidden);
  embedding(net, "segments", rows, 2, hidden);
  sum_embeddings(net, first, rows * hidden);
  layer_norm(net, "embeddings.norm", rows, hidden);
  dropout(net, "embeddings.dropout", rows * hidden);
  encoder(net, args, false);
  next_sentence_head(net, hidden);
  masked_token_head(net, net.batch * masked, hidden, vocabulary, first,
                    args.integer("framework") == 1);
  return net;
}

}  // namespace tandem::sim::catalog
