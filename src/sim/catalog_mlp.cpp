// The zoo's multilayer perceptron (src/models/mlp.cpp): the flattened image through `layers`
// x (Linear(hidden) + ReLU), then Linear(classes).

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {

network build_mlp(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t side = args.integer("image_side");
  const image x = input_images(net, {args.integer("channels"), side, side});
  const std::int64_t hidden = args.integer("hidden");
  const std::int64_t classes = args.integer("classes");
  std::int64_t width = x.elements();
  for (std::int64_t i = 0; i < args.integer("layers"); ++i) {
    linear_options options;
    options.input_needs_gradient = i > 0;
    const std::string name = "fc" + std::to_string(i + 1);
    linear(net, name, net.batch, width, hidden, options);
    net.release_last_after_next();  // the ReLU keeps its own output
    activation_layer(net, name + ".relu", net.batch * hidden);
    width = hidden;
  }
  linear(net, "classifier", net.batch, width, classes);
  net.release_last_after_next();
  cross_entropy(net, "loss", net.batch, classes);
  return net;
}

}  // namespace tandem::sim::catalog
