// The zoo's VGG-16 with batch norm (src/models/vgg16.cpp): thirteen 3x3 convolutions with bias,
// each followed by batch norm and a ReLU, five 2x2 max pools, and a classifier of two hidden
// layers sized to the map left. `hidden` (512 by default, as in the zoo) sets the
// classifier's width before the width multiplier: 4096 with image_side 224 and classes 1000 is
// ImageNet's VGG-16 (138M).

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t pool_marker = 0;
constexpr std::int64_t layout[] = {64,  64,          pool_marker, 128,         128, pool_marker,
                                   256, 256,         256,         pool_marker, 512, 512,
                                   512, pool_marker, 512,         512,         512, pool_marker};

}  // namespace

network build_vgg16(const model_args& args) {
  network net;
  net.batch = args.batch();
  const double w = args.real("width_multiplier");
  const std::int64_t side = args.integer("image_side");
  image x = input_images(net, {args.integer("channels"), side, side});
  int convolution = 0;
  int pool = 0;
  for (const std::int64_t channels : layout) {
    if (channels == pool_marker) {
      x = max_pool(net, "pool" + std::to_string(++pool), x, 2, 2, 0);
      continue;
    }
    conv_spec spec = square_conv(scaled_channels(channels, w), 3);
    spec.bias = true;
    if (convolution == 0) spec = first_layer(spec);
    x = conv_bn(net, "conv" + std::to_string(++convolution), x, spec, activation::relu);
  }
  const std::int64_t hidden = scaled_channels(args.integer("hidden"), w);
  const std::int64_t classes = args.integer("classes");
  linear(net, "fc1", net.batch, x.elements(), hidden);
  net.release_last_after_next();  // the ReLU keeps its own output
  activation_layer(net, "fc1.relu", net.batch * hidden);
  linear(net, "fc2", net.batch, hidden, hidden);
  net.release_last_after_next();
  activation_layer(net, "fc2.relu", net.batch * hidden);
  linear(net, "fc3", net.batch, hidden, classes);
  net.release_last_after_next();
  cross_entropy(net, "loss", net.batch, classes);
  return net;
}

}  // namespace tandem::sim::catalog
