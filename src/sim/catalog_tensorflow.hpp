#pragma once
// A network as TensorFlow 1.x's graph issues it (the framework Zico, Waterwave and Salus trained
// on): the same arithmetic, bytes, fill and memory, more and smaller operations for the host to
// issue. The model-specific parts (GNMT's LSTM steps, BERT's GELU) are in their builders; this
// pass rewrites what every model shares (docs/sim-models.md, "Frameworks").

#include "catalog_graph.hpp"

namespace tandem::sim::catalog {

/// Rewrites `net`'s operation counts as TF 1.x issues them: batch norm's moving averages, layer
/// norm and dropout unfused, and an optimizer update per variable (`network::per_variable_step`).
/// `l2_weight_decay`: the training script adds an L2 loss of every weight to the objective, as
/// TF-slim's and tf_cnn_benchmarks' image models do (PyTorch folds it into the optimizer).
void lower_as_tensorflow1(network& net, bool l2_weight_decay);

}  // namespace tandem::sim::catalog
