// SqueezeNet v1.1 (Iandola et al. 2016) as torchvision defines it (squeezenet1_1): a 3x3
// stride-2 convolution of 64 filters, then max pools (3x3, stride 2, ceil_mode) between Fire
// modules 16/64, 16/64 | 32/128, 32/128 | 48/192, 48/192, 64/256, 64/256 (squeeze: 1x1
// convolution; expand: a 1x1 and a padded 3x3 convolution of the given filters each,
// concatenated), dropout 0.5, a 1x1 convolution to the classes, ReLU and global average
// pooling. Every convolution has a bias and is followed by a ReLU in place. 1,235,496
// parameters at 1000 classes (torchvision's), 727,626 at 10.
//
// A convolution and its ReLU in place are one layer here: the rectified map is the
// convolution's output, which the next layer reads and both backwards need, and the ReLU's
// backward makes the gradient the convolution's backward reads (a temporary of its size).

#include <algorithm>

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {
namespace {

image conv_relu(network& net, const std::string& name, image in, conv_spec spec) {
  spec.bias = true;
  const image out = conv2d(net, name, in, spec);
  layer& l = net.layers.back();
  const std::int64_t elements = net.batch * out.elements();
  const auto bytes = static_cast<double>(elements * fp32_bytes);
  // Forward: the ReLU reads and writes the map once more. Backward: threshold_backward reads
  // the output gradient and the map and writes the convolution's output gradient.
  l.forward.flops += static_cast<double>(elements);
  l.forward.bytes += 2 * bytes;
  l.forward.kernels += 1;
  l.backward.flops += static_cast<double>(elements);
  l.backward.bytes += 3 * bytes;
  l.backward.kernels += 1;
  l.backward.blocks = std::max(l.backward.blocks, elementwise_blocks(elements));
  l.backward_scratch_bytes += elements * fp32_bytes;
  return out;
}

image fire(network& net, const std::string& name, image in, std::int64_t squeeze,
           std::int64_t expand) {
  const image s = conv_relu(net, name + ".squeeze", in, square_conv(squeeze, 1));
  conv_relu(net, name + ".expand1x1", s, square_conv(expand, 1));
  conv_relu(net, name + ".expand3x3", s, square_conv(expand, 3));
  const image out{2 * expand, s.height, s.width};
  concat(net, name, net.batch * out.elements());
  return out;
}

}  // namespace

network build_squeezenet(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t side = args.integer("image_side");
  image x = input_images(net, {args.integer("channels"), side, side});
  x = conv_relu(net, "conv1", x, first_layer(valid_conv(64, 3, 2)));
  x = max_pool_ceil(net, "pool1", x, 3, 2, 0);
  x = fire(net, "fire2", x, 16, 64);
  x = fire(net, "fire3", x, 16, 64);
  x = max_pool_ceil(net, "pool3", x, 3, 2, 0);
  x = fire(net, "fire4", x, 32, 128);
  x = fire(net, "fire5", x, 32, 128);
  x = max_pool_ceil(net, "pool5", x, 3, 2, 0);
  x = fire(net, "fire6", x, 48, 192);
  x = fire(net, "fire7", x, 48, 192);
  x = fire(net, "fire8", x, 64, 256);
  x = fire(net, "fire9", x, 64, 256);
  const std::int64_t classes = args.integer("classes");
  dropout(net, "dropout", net.batch * x.elements());
  x = conv_relu(net, "conv10", x, square_conv(classes, 1));
  global_average_pool(net, "pool", x);
  net.release_last_after_next();  // read by the loss only
  cross_entropy(net, "loss", net.batch, classes);
  return net;
}

}  // namespace tandem::sim::catalog
