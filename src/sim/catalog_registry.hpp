#pragma once
// The catalogue's registry: each model's name, the options it reads (defaults and ranges) and
// its builder; the checks a request passes before a builder sees it. The zoo's models read the
// zoo's option table, so that `tandem run` and `tandem sim` judge their options alike.

#include <functional>
#include <string>
#include <vector>

#include "catalog_graph.hpp"
#include "catalog_models.hpp"
#include "tandem/models/option_ranges.hpp"
#include "tandem/sim/profile_generator.hpp"

namespace tandem::sim::catalog {

/// An option's default and range: the zoo's models take theirs from the table the zoo and the
/// workload validation share (tandem/models/option_ranges.hpp), the papers' models add their own.
using option_spec = models::option_range;

struct model_entry {
  std::string name;
  std::vector<option_spec> options;
  /// Checks that involve several options or a particular architecture; may be empty.
  std::function<void(const model_args&)> check;
  std::function<network(const model_args&)> build;
  /// Its TensorFlow 1.x training script regularises every weight with an L2 loss (the image
  /// models, as TF-slim and tf_cnn_benchmarks train them): part of `framework` 1's lowering.
  bool l2_weight_decay = false;
};

[[nodiscard]] const std::vector<model_entry>& catalogue();

/// The names of `entry`'s options, in order.
[[nodiscard]] std::vector<std::string> option_names(const model_entry& entry);

/// The entry named `name`; throws config_error listing the models and suggesting the closest.
[[nodiscard]] const model_entry& find_model(const std::string& name);

/// The request's batch and options checked against `entry` (unknown options, ranges, whole
/// numbers, the entry's own check), with defaults filled in.
[[nodiscard]] model_args resolve(const model_entry& entry, const model_request& request);

}  // namespace tandem::sim::catalog
