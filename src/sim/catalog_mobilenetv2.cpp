// The zoo's MobileNetV2 (src/models/mobilenetv2.cpp): a stride-2 stem, seventeen inverted
// residual blocks (1x1 expand, 3x3 depthwise, 1x1 linear projection, a shortcut where the shape
// allows), a 1x1 convolution to 1280 channels, pooling and a linear classifier; channels rounded
// to multiples of 8 after the width multiplier, ReLU6 not in place (libtorch's hardtanh: its
// backward reads its input, so the batch norm's output is kept as well as the ReLU6's).

#include <algorithm>

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {
namespace {

/// Nearest multiple of 8 to `channels` that is at least 90% of it.
std::int64_t divisible_by_8(double channels) {
  auto rounded = std::max<std::int64_t>(8, (static_cast<std::int64_t>(channels + 4.0) / 8) * 8);
  if (static_cast<double>(rounded) < 0.9 * channels) rounded += 8;
  return rounded;
}

struct stage_spec {
  std::int64_t expand;
  std::int64_t channels;
  std::int64_t blocks;
  std::int64_t stride;
};
constexpr stage_spec stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};

image inverted_residual(network& net, const std::string& name, image in, std::int64_t out,
                        std::int64_t stride, std::int64_t expand) {
  const std::int64_t hidden = in.channels * expand;
  image x = in;
  if (expand != 1) {
    x = conv_bn(net, name + ".expand", x, square_conv(hidden, 1), activation::relu6);
  }
  x = conv_bn(net, name + ".depthwise", x, square_conv(hidden, 3, stride, hidden),
              activation::relu6);
  x = conv_bn(net, name + ".project", x, square_conv(out, 1), activation::none);
  if (stride == 1 && in.channels == out) {
    const std::size_t projected = net.last_index();
    add(net, name + ".add", net.batch * x.elements());
    net.release_after_last(projected);  // read by the addition only
  }
  return x;
}

}  // namespace

network build_mobilenetv2(const model_args& args) {
  network net;
  net.batch = args.batch();
  const double w = args.real("width_multiplier");
  const std::int64_t side = args.integer("image_side");
  image x = input_images(net, {args.integer("channels"), side, side});
  x = conv_bn(net, "stem", x, first_layer(square_conv(divisible_by_8(32.0 * w), 3, 2)),
              activation::relu6);
  int index = 0;
  for (const auto& stage : stages) {
    const std::int64_t out = divisible_by_8(static_cast<double>(stage.channels) * w);
    for (std::int64_t i = 0; i < stage.blocks; ++i) {
      const std::int64_t stride = i == 0 ? stage.stride : 1;
      x = inverted_residual(net, "block" + std::to_string(index++), x, out, stride, stage.expand);
    }
  }
  const std::int64_t last = divisible_by_8(1280.0 * std::max(1.0, w));
  x = conv_bn(net, "head", x, square_conv(last, 1), activation::relu6);
  image_classifier(net, x, args.integer("classes"));
  return net;
}

}  // namespace tandem::sim::catalog
