// The zoo's ResNets (src/models/resnet_cifar.cpp, resnet50.cpp): CIFAR ResNets of depth 6n+2
// with basic blocks and zero-padded shortcuts (option A), and ResNet-50 v1.5 with bottleneck
// blocks. As there, ReLU is not in place: relu(bn(conv(x))) keeps the convolution's output and
// the ReLU's, and the normalised map lives only until the ReLU has read it.

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {
namespace {

/// Subsampling and zero-padding the new channels (a new tensor read only by the addition).
std::size_t padded_shortcut(network& net, const std::string& name, image in, image out) {
  layer l;
  l.name = name;
  l.kind = op_kind::elementwise;
  const std::int64_t in_elements = net.batch * in.elements();
  const std::int64_t out_elements = net.batch * out.elements();
  l.forward.bytes = static_cast<double>((in_elements / 4 + out_elements) * fp32_bytes);
  l.forward.blocks = elementwise_blocks(out_elements);
  l.forward.kernels = 2;
  l.backward.bytes = static_cast<double>((out_elements + in_elements) * fp32_bytes);
  l.backward.blocks = elementwise_blocks(in_elements);
  l.backward.kernels = 2;
  l.output_bytes = out_elements * fp32_bytes;
  l.input_gradient_bytes = in_elements * fp32_bytes;
  return net.add(std::move(l));
}

/// relu(branch + shortcut). The branch's last output and a computed shortcut are read by the
/// addition only, and the sum by the ReLU only.
void add_relu(network& net, const std::string& name, image out, std::size_t branch,
              std::size_t shortcut) {
  add(net, name + ".add", net.batch * out.elements());
  net.release_after_last(branch);
  if (shortcut != kept_for_backward) net.release_after_last(shortcut);
  net.release_last_after_next();
  activation_layer(net, name + ".relu", net.batch * out.elements());
}

image basic_block(network& net, const std::string& name, image in, std::int64_t out_channels,
                  std::int64_t stride) {
  const image out{out_channels, side_after(in.height, 3, stride, 1),
                  side_after(in.width, 3, stride, 1)};
  const image mid = conv2d(net, name + ".conv1", in, square_conv(out_channels, 3, stride));
  batch_norm(net, name + ".bn1", mid, activation::relu);
  conv2d(net, name + ".conv2", mid, square_conv(out_channels, 3));
  batch_norm(net, name + ".bn2", out, activation::none);
  const std::size_t branch = net.last_index();
  // The zoo computes the shortcut inside the addition, after the branch.
  std::size_t shortcut = kept_for_backward;
  if (stride != 1 || in.channels != out_channels) {
    shortcut = padded_shortcut(net, name + ".shortcut", in, out);
  }
  add_relu(net, name, out, branch, shortcut);
  return out;
}

image bottleneck(network& net, const std::string& name, image in, std::int64_t width,
                 std::int64_t stride) {
  const std::int64_t expanded = 4 * width;
  image y = conv_bn(net, name + ".reduce", in, square_conv(width, 1), activation::relu);
  y = conv_bn(net, name + ".spatial", y, square_conv(width, 3, stride), activation::relu);
  const image out = conv_bn(net, name + ".expand", y, square_conv(expanded, 1), activation::none);
  const std::size_t branch = net.last_index();
  // The zoo projects the shortcut after the branch, as the addition's second operand.
  std::size_t projection = kept_for_backward;
  if (stride != 1 || in.channels != expanded) {
    conv_bn(net, name + ".projection", in, square_conv(expanded, 1, stride), activation::none);
    projection = net.last_index();
  }
  add_relu(net, name, out, branch, projection);
  return out;
}

}  // namespace

network build_resnet_cifar(const model_args& args, std::int64_t depth) {
  network net;
  net.batch = args.batch();
  const double w = args.real("width_multiplier");
  const std::int64_t side = args.integer("image_side");
  image x = input_images(net, {args.integer("channels"), side, side});
  x = conv_bn(net, "stem", x, first_layer(square_conv(scaled_channels(16, w), 3)),
              activation::relu);
  const std::int64_t blocks = (depth - 2) / 6;
  for (std::int64_t stage = 0; stage < 3; ++stage) {
    const std::int64_t out = scaled_channels(16 << stage, w);
    for (std::int64_t i = 0; i < blocks; ++i) {
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string name = "stage" + std::to_string(stage + 1) + "_" + std::to_string(i);
      x = basic_block(net, name, x, out, stride);
    }
  }
  image_classifier(net, x, args.integer("classes"));
  return net;
}

network build_resnet50(const model_args& args) {
  network net;
  net.batch = args.batch();
  const double w = args.real("width_multiplier");
  const std::int64_t side = args.integer("image_side");
  image x = input_images(net, {args.integer("channels"), side, side});
  x = conv_bn(net, "stem", x, first_layer(square_conv(scaled_channels(64, w), 7, 2)),
              activation::relu);
  x = max_pool(net, "pool0", x, 3, 2, 1);
  const std::int64_t blocks_per_stage[] = {3, 4, 6, 3};
  for (std::int64_t stage = 0; stage < 4; ++stage) {
    const std::int64_t width = scaled_channels(64 << stage, w);
    for (std::int64_t i = 0; i < blocks_per_stage[stage]; ++i) {
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string name = "stage" + std::to_string(stage + 1) + "_" + std::to_string(i);
      x = bottleneck(net, name, x, width, stride);
    }
  }
  image_classifier(net, x, args.integer("classes"));
  return net;
}

}  // namespace tandem::sim::catalog
