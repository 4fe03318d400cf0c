#include "catalog_attention.hpp"

#include <algorithm>

#include "catalog_layers.hpp"

namespace tandem::sim::catalog {
namespace {

double real(std::int64_t value) {
  return static_cast<double>(value);
}

work attention_work(double flops, double bytes, double blocks, int kernels) {
  work w;
  w.flops = flops;
  w.bytes = bytes;
  w.blocks = std::max(1.0, blocks);
  w.kernels = kernels;
  return w;
}

/// Queries scaled, keys and values copied into per-head layout: three tensors of the projection's
/// width each, the queries the output, keys and values saved.
void per_head_copies(network& net, const std::string& name, const self_attention_spec& spec) {
  const std::int64_t elements = net.batch * spec.length * spec.hidden;
  const double bytes = real(6 * elements * fp32_bytes);  // three read, three written
  layer l;
  l.name = name + ".heads";
  l.kind = op_kind::elementwise;
  l.forward = attention_work(real(elements), bytes, elementwise_blocks(3 * elements), 3);
  l.backward = attention_work(real(elements), bytes, elementwise_blocks(3 * elements), 3);
  l.output_bytes = elements * fp32_bytes;
  l.saved_bytes = 2 * elements * fp32_bytes;
  l.saved_tensors = 2;
  l.input_gradient_bytes = 3 * elements * fp32_bytes;  // the projection's output's gradient
  net.add(std::move(l));
}

/// Scores q.k^T / sqrt(d) and their softmax, per head: [batch, heads, length, length].
void scores(network& net, const std::string& name, const self_attention_spec& spec) {
  const std::int64_t n = spec.length;
  const std::int64_t scores = net.batch * spec.heads * n * n;
  const std::int64_t rows = net.batch * n;
  const double gemm = 2.0 * real(net.batch) * real(n) * real(n) * real(spec.hidden);
  const double score_bytes = real(scores * fp32_bytes);
  const double qk_bytes = real(2 * rows * spec.hidden * fp32_bytes);
  const double blocks = gemm_tiles(n, n) * real(net.batch * spec.heads);
  layer l;
  l.name = name + ".scores";
  l.kind = op_kind::attention;
  // Batched GEMM, scaling, softmax (reads the scores, writes the probabilities).
  l.forward = attention_work(gemm + 5.0 * real(scores), qk_bytes + 4 * score_bytes, blocks, 3);
  // Softmax backward, then the gradients of queries and keys.
  l.backward =
      attention_work(2 * gemm + 5.0 * real(scores), 2 * qk_bytes + 5 * score_bytes, blocks, 3);
  l.output_bytes = scores * fp32_bytes;            // the probabilities (softmax backward)
  l.forward_scratch_bytes = scores * fp32_bytes;   // the raw scores
  l.backward_scratch_bytes = scores * fp32_bytes;  // the scores' gradient
  l.input_gradient_bytes = 2 * rows * spec.hidden * fp32_bytes;  // queries' and keys'
  net.add(std::move(l));
}

/// The probabilities applied to the values: [batch, length, hidden].
void context(network& net, const std::string& name, const self_attention_spec& spec) {
  const std::int64_t n = spec.length;
  const std::int64_t scores = net.batch * spec.heads * n * n;
  const std::int64_t rows = net.batch * n;
  const double gemm = 2.0 * real(net.batch) * real(n) * real(n) * real(spec.hidden);
  const double value_bytes = real(rows * spec.hidden * fp32_bytes);
  const double blocks = gemm_tiles(n, spec.hidden / spec.heads) * real(net.batch * spec.heads);
  layer l;
  l.name = name + ".context";
  l.kind = op_kind::attention;
  l.forward = attention_work(gemm, real(scores * fp32_bytes) + 2 * value_bytes, blocks, 1);
  l.backward = attention_work(2 * gemm, real(2 * scores * fp32_bytes) + 3 * value_bytes, blocks, 2);
  l.output_bytes = rows * spec.hidden * fp32_bytes;
  // The probabilities' gradient and the values'.
  l.input_gradient_bytes = (scores + rows * spec.hidden) * fp32_bytes;
  net.add(std::move(l));
}

}  // namespace

void self_attention(network& net, const std::string& name, const self_attention_spec& spec) {
  const std::int64_t rows = net.batch * spec.length;
  linear(net, name + ".qkv", rows, spec.hidden, 3 * spec.hidden);
  if (spec.per_head_copies) {
    net.release_last_after_next();  // read by the copies only
    per_head_copies(net, name, spec);
  }
  scores(net, name, spec);
  if (spec.dropout) {
    dropout(net, name + ".probs_dropout", net.batch * spec.heads * spec.length * spec.length);
  }
  context(net, name, spec);
  linear(net, name + ".out", rows, spec.hidden, spec.hidden);
}

void additive_attention(network& net, const std::string& name,
                        const additive_attention_spec& spec) {
  const std::int64_t b = net.batch;
  const std::int64_t h = spec.hidden;
  linear(net, name + ".keys", b * spec.keys, h, h, without_bias());
  const std::size_t keys = net.last_index();
  linear(net, name + ".query", b * spec.queries, h, h, without_bias());
  const std::size_t query = net.last_index();

  const std::int64_t expanded = b * spec.queries * spec.keys * h;
  const std::int64_t weights = b * spec.queries * spec.keys;
  const double expanded_bytes = real(expanded * fp32_bytes);
  const double context_flops = 2.0 * real(weights) * real(h);
  layer l;
  l.name = name + ".scores";
  l.kind = op_kind::attention;
  l.parameters = {h, 1, h};  // the score vector, the normalisation scalar and bias
  // q + k (written, read), tanh (written, read by the score product), softmax, context.
  l.forward = attention_work(11.0 * real(expanded) + context_flops, 4 * expanded_bytes,
                             gemm_tiles(b * spec.queries * spec.keys, h), 5);
  l.backward = attention_work(5.0 * real(expanded) + 2 * context_flops, 5 * expanded_bytes,
                              gemm_tiles(b * spec.queries * spec.keys, h), 6);
  l.output_bytes = b * spec.queries * h * fp32_bytes;
  l.saved_bytes = expanded * fp32_bytes + weights * fp32_bytes;  // tanh output, probabilities
  l.forward_scratch_bytes = expanded * fp32_bytes;               // q + k
  l.backward_scratch_bytes = expanded * fp32_bytes;
  l.input_gradient_bytes = b * (spec.queries + spec.keys) * h * fp32_bytes;
  net.add(std::move(l));
  net.release_after_last(keys);
  net.release_after_last(query);
}

}  // namespace tandem::sim::catalog
