// The recurrent highway network language model of Zilly et al. (ICML 2017, Penn Treebank,
// "variational RHN + WT"): an embedding of width `hidden` tied to the softmax, one RHN layer of
// recurrence `depth` with coupled carry gates, dropout on the layer's input and output (the
// paper's variational masks, one per element here), 35 unrolled steps, vocabulary 10,000.
// Depth 10 and width 830 give the paper's 23M parameters.

#include "catalog_layers.hpp"
#include "catalog_models.hpp"
#include "catalog_recurrent.hpp"

namespace tandem::sim::catalog {

network build_rhn(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t length = args.integer("sequence_length");
  const std::int64_t vocabulary = args.integer("vocabulary");
  const std::int64_t hidden = args.integer("hidden");
  const std::int64_t rows = net.batch * length;
  input_tokens(net, length, length);
  embedding(net, "embedding", rows, vocabulary, hidden);
  const std::size_t table = net.last_index();
  dropout(net, "input.dropout", rows * hidden);
  recurrent_spec spec;
  spec.steps = length;
  spec.input = hidden;
  spec.hidden = hidden;
  spec.steps_per_op = steps_per_op_for(length, 1);
  rhn(net, "rhn", spec, args.integer("depth"));
  dropout(net, "output.dropout", rows * hidden);
  linear(net, "softmax", rows, hidden, vocabulary, with_weight_of(table));
  net.release_last_after_next();
  cross_entropy(net, "loss", rows, vocabulary);
  return net;
}

}  // namespace tandem::sim::catalog
