// Inception-v3 (Szegedy et al. 2016) in torchvision's layout without the auxiliary classifier:
// every convolution is BasicConv2d (no bias, batch norm, ReLU in place); the stem, three
// Inception-A blocks at 35x35, a grid reduction, four Inception-C blocks with factorised 7x7
// convolutions at 17x17, a second reduction, two Inception-E blocks at 8x8, pooling, dropout and
// the classifier. 23.8M parameters at 1000 classes; 299x299 images.

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {
namespace {

image basic(network& net, const std::string& name, image in, const conv_spec& spec) {
  return conv_bn(net, name, in, spec, activation::relu_in_place);
}

image conv1x1(network& net, const std::string& name, image in, std::int64_t out) {
  return basic(net, name, in, square_conv(out, 1));
}

image same(network& net, const std::string& name, image in, std::int64_t out, std::int64_t kh,
           std::int64_t kw) {
  return basic(net, name, in, rect_conv(out, kh, kw));
}

image joined(network& net, const std::string& name, image like, std::int64_t channels) {
  const image out{channels, like.height, like.width};
  concat(net, name, net.batch * out.elements());
  return out;
}

image inception_a(network& net, const std::string& name, image in, std::int64_t pool_features) {
  conv1x1(net, name + ".b1", in, 64);
  same(net, name + ".b5_2", conv1x1(net, name + ".b5_1", in, 48), 64, 5, 5);
  image d = conv1x1(net, name + ".b3_1", in, 64);
  d = same(net, name + ".b3_2", d, 96, 3, 3);
  same(net, name + ".b3_3", d, 96, 3, 3);
  conv1x1(net, name + ".pool_conv", average_pool(net, name + ".pool", in, 3, 1, 1), pool_features);
  return joined(net, name, in, 64 + 64 + 96 + pool_features);
}

image inception_b(network& net, const std::string& name, image in) {
  const image out = basic(net, name + ".b3", in, valid_conv(384, 3, 2));
  image d = conv1x1(net, name + ".b3dbl_1", in, 64);
  d = same(net, name + ".b3dbl_2", d, 96, 3, 3);
  basic(net, name + ".b3dbl_3", d, valid_conv(96, 3, 2));
  max_pool(net, name + ".pool", in, 3, 2, 0);
  return joined(net, name, out, 384 + 96 + in.channels);
}

image inception_c(network& net, const std::string& name, image in, std::int64_t c7) {
  conv1x1(net, name + ".b1", in, 192);
  image b = conv1x1(net, name + ".b7_1", in, c7);
  b = same(net, name + ".b7_2", b, c7, 1, 7);
  same(net, name + ".b7_3", b, 192, 7, 1);
  image d = conv1x1(net, name + ".b7dbl_1", in, c7);
  d = same(net, name + ".b7dbl_2", d, c7, 7, 1);
  d = same(net, name + ".b7dbl_3", d, c7, 1, 7);
  d = same(net, name + ".b7dbl_4", d, c7, 7, 1);
  same(net, name + ".b7dbl_5", d, 192, 1, 7);
  conv1x1(net, name + ".pool_conv", average_pool(net, name + ".pool", in, 3, 1, 1), 192);
  return joined(net, name, in, 4 * 192);
}

image inception_d(network& net, const std::string& name, image in) {
  const image out =
      basic(net, name + ".b3_2", conv1x1(net, name + ".b3_1", in, 192), valid_conv(320, 3, 2));
  image b = conv1x1(net, name + ".b7_1", in, 192);
  b = same(net, name + ".b7_2", b, 192, 1, 7);
  b = same(net, name + ".b7_3", b, 192, 7, 1);
  basic(net, name + ".b7_4", b, valid_conv(192, 3, 2));
  max_pool(net, name + ".pool", in, 3, 2, 0);
  return joined(net, name, out, 320 + 192 + in.channels);
}

/// A 1x3 and a 3x1 convolution of `in`, concatenated.
void split_3x3(network& net, const std::string& name, image in) {
  same(net, name + "a", in, 384, 1, 3);
  same(net, name + "b", in, 384, 3, 1);
  joined(net, name, in, 768);
}

image inception_e(network& net, const std::string& name, image in) {
  conv1x1(net, name + ".b1", in, 320);
  split_3x3(net, name + ".b3_2", conv1x1(net, name + ".b3_1", in, 384));
  image d = conv1x1(net, name + ".b3dbl_1", in, 448);
  d = same(net, name + ".b3dbl_2", d, 384, 3, 3);
  split_3x3(net, name + ".b3dbl_3", d);
  conv1x1(net, name + ".pool_conv", average_pool(net, name + ".pool", in, 3, 1, 1), 192);
  return joined(net, name, in, 320 + 768 + 768 + 192);
}

}  // namespace

network build_inception_v3(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t side = args.integer("image_side");
  image x = input_images(net, {args.integer("channels"), side, side});
  x = basic(net, "conv1a", x, first_layer(valid_conv(32, 3, 2)));
  x = basic(net, "conv2a", x, valid_conv(32, 3));
  x = basic(net, "conv2b", x, square_conv(64, 3));
  x = max_pool(net, "pool1", x, 3, 2, 0);
  x = conv1x1(net, "conv3b", x, 80);
  x = basic(net, "conv4a", x, valid_conv(192, 3));
  x = max_pool(net, "pool2", x, 3, 2, 0);
  x = inception_a(net, "mixed5b", x, 32);
  x = inception_a(net, "mixed5c", x, 64);
  x = inception_a(net, "mixed5d", x, 64);
  x = inception_b(net, "mixed6a", x);
  x = inception_c(net, "mixed6b", x, 128);
  x = inception_c(net, "mixed6c", x, 160);
  x = inception_c(net, "mixed6d", x, 160);
  x = inception_c(net, "mixed6e", x, 192);
  x = inception_d(net, "mixed7a", x);
  x = inception_e(net, "mixed7b", x);
  x = inception_e(net, "mixed7c", x);
  const std::int64_t classes = args.integer("classes");
  global_average_pool(net, "pool", x);
  dropout(net, "dropout", net.batch * x.channels);
  linear(net, "classifier", net.batch, x.channels, classes);
  net.release_last_after_next();
  cross_entropy(net, "loss", net.batch, classes);
  return net;
}

}  // namespace tandem::sim::catalog
