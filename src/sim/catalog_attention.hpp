#pragma once
// Attention as eager PyTorch computes it: the score matrices are materialised (no fused
// attention kernel), so their memory grows with the square of the sequence length.

#include <cstdint>
#include <string>

#include "catalog_graph.hpp"

namespace tandem::sim::catalog {

struct self_attention_spec {
  std::int64_t length = 0;  ///< tokens per sequence
  std::int64_t hidden = 0;
  std::int64_t heads = 1;
  bool dropout = false;  ///< dropout on the attention probabilities (BERT: 0.1)
  /// libtorch's MultiheadAttention (the zoo's bert_mini): the projection's output is read once
  /// more, to make the queries (scaled), keys and values (made contiguous per head) as three new
  /// tensors, which the score and context products keep for their backward.
  bool per_head_copies = false;
};

/// Multi-head self-attention over [batch, length, hidden]: one projection to queries, keys and
/// values, per-head scores and softmax, the weighted values, the output projection. The output
/// projection's result is the last layer added.
void self_attention(network& net, const std::string& name, const self_attention_spec& spec);

struct additive_attention_spec {
  std::int64_t queries = 0;  ///< decoder steps
  std::int64_t keys = 0;     ///< encoder steps
  std::int64_t hidden = 0;
};

/// GNMT's normalised Bahdanau attention for every decoder step at once: projections of queries
/// and keys, tanh(q + k) over [batch, queries, keys, hidden] (the tensor that makes GNMT's short
/// memory peak), scores, softmax and the context [batch, queries, hidden].
void additive_attention(network& net, const std::string& name, const additive_attention_spec& spec);

}  // namespace tandem::sim::catalog
