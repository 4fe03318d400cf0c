// NASNet-A (Zoph et al. 2018) in the layout of TF-slim's nasnet.py, NASNet-A Mobile by default
// ("4 @ 1056": `layers` = 4 normal cells per stage, `filters` = 1056 penultimate filters, 224x224
// images, 5.3M parameters). The stem is a 3x3 stride-2 convolution of 32 filters and two
// reduction cells; then three stages of normal cells with a reduction cell between them, filters
// doubling at each reduction; global pooling and the classifier.
//
// Each cell first brings both inputs to F filters (ReLU, 1x1 convolution, batch norm; a
// factorised reduction when the earlier input is twice as large), then sums pairs of operations
// in five blocks and concatenates the results: the normal cell's six outputs (6F), the
// reduction cell's four (4F). Separable convolutions are stacked twice (ReLU, depthwise,
// pointwise, batch norm). Simplified: no auxiliary head, no drop-path, the mobile stem for every
// size, and the previous-previous input always the cell two back (TF's mobile rule).

#include <cstdint>
#include <vector>

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t stem_filters = 32;

image relu(network& net, const std::string& name, image in) {
  activation_layer(net, name, net.batch * in.elements());
  return in;
}

/// ReLU, 1x1 convolution (with stride), batch norm.
image relu_conv_bn(network& net, const std::string& name, image in, std::int64_t filters,
                   std::int64_t stride = 1) {
  relu(net, name + ".relu", in);
  return conv_bn(net, name, in, square_conv(filters, 1, stride), activation::none);
}

/// Halves the side with two stride-2 1x1 convolutions on offset grids, concatenated.
image factorized_reduction(network& net, const std::string& name, image in, std::int64_t filters) {
  relu(net, name + ".relu", in);
  const image half = average_pool(net, name + ".path1_pool", in, 1, 2, 0);
  conv2d(net, name + ".path1", half, square_conv(filters / 2, 1));
  average_pool(net, name + ".path2_pool", in, 1, 2, 0);
  conv2d(net, name + ".path2", half, square_conv(filters - filters / 2, 1));
  const image out{filters, half.height, half.width};
  concat(net, name + ".concat", net.batch * out.elements());
  batch_norm(net, name + "_bn", out, activation::none);
  return out;
}

/// Two stacked (ReLU, depthwise k x k, pointwise, batch norm); only the first strides.
image separable(network& net, const std::string& name, image in, std::int64_t kernel,
                std::int64_t stride) {
  image x = in;
  for (int i = 0; i < 2; ++i) {
    const std::string part = name + "." + std::to_string(i);
    relu(net, part + ".relu", x);
    x = conv2d(net, part + ".depthwise", x,
               square_conv(x.channels, kernel, i == 0 ? stride : 1, x.channels));
    x = conv_bn(net, part + ".pointwise", x, square_conv(in.channels, 1), activation::none);
  }
  return x;
}

enum class op : std::uint8_t { sep3, sep5, sep7, avg, max, none };

image apply(network& net, const std::string& name, op o, image in, std::int64_t stride) {
  switch (o) {
    case op::sep3:
      return separable(net, name, in, 3, stride);
    case op::sep5:
      return separable(net, name, in, 5, stride);
    case op::sep7:
      return separable(net, name, in, 7, stride);
    case op::avg:
      return average_pool(net, name, in, 3, stride, 1);
    case op::max:
      return max_pool(net, name, in, 3, stride, 1);
    case op::none:
      break;
  }
  return stride == 1 ? in : relu_conv_bn(net, name, in, in.channels, stride);
}

struct cell_spec {
  std::vector<op> ops;      // two per block
  std::vector<int> inputs;  // the hidden state each op reads
  std::vector<bool> used;   // states left out of the output
  bool reduction = false;
};

const cell_spec& normal_cell() {
  static const cell_spec spec{{op::sep5, op::sep3, op::sep5, op::sep3, op::avg, op::none, op::avg,
                               op::avg, op::sep3, op::none},
                              {0, 1, 1, 1, 0, 1, 1, 1, 0, 0},
                              {true, false, false, false, false, false, false},
                              false};
  return spec;
}

const cell_spec& reduction_cell() {
  static const cell_spec spec{{op::sep5, op::sep7, op::max, op::sep7, op::avg, op::sep5, op::none,
                               op::avg, op::sep3, op::max},
                              {0, 1, 0, 1, 0, 1, 3, 2, 2, 0},
                              {true, true, true, false, false, false, false},
                              true};
  return spec;
}

/// The cell's two inputs brought to `filters`: [current, previous].
std::vector<image> cell_base(network& net, const std::string& name, image current, image previous,
                             std::int64_t filters) {
  if (previous.height != current.height) {
    previous = factorized_reduction(net, name + ".previous", previous, filters);
  } else if (previous.channels != filters) {
    previous = relu_conv_bn(net, name + ".previous", previous, filters);
  }
  current = relu_conv_bn(net, name + ".current", current, filters);
  return {current, previous};
}

image cell(network& net, const std::string& name, const cell_spec& spec, image current,
           image previous, std::int64_t filters) {
  std::vector<image> states = cell_base(net, name, current, previous, filters);
  for (std::size_t block = 0; block < 5; ++block) {
    image sum{};
    for (std::size_t side = 0; side < 2; ++side) {
      const std::size_t k = 2 * block + side;
      const auto input = static_cast<std::size_t>(spec.inputs[k]);
      const std::int64_t stride = spec.reduction && input < 2 ? 2 : 1;
      sum = apply(net, name + ".b" + std::to_string(block) + "_" + std::to_string(side),
                  spec.ops[k], states[input], stride);
    }
    add(net, name + ".b" + std::to_string(block), net.batch * sum.elements());
    states.push_back(sum);
  }
  image out{0, states.back().height, states.back().width};
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (!spec.used[i]) out.channels += states[i].channels;
  }
  concat(net, name + ".concat", net.batch * out.elements());
  return out;
}

}  // namespace

network build_nasnet(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t side = args.integer("image_side");
  const std::int64_t cells_per_stage = args.integer("layers");
  const std::int64_t filters = args.integer("filters") / 24;
  image x = input_images(net, {args.integer("channels"), side, side});
  x = conv_bn(net, "conv0", x, first_layer(valid_conv(stem_filters, 3, 2)), activation::none);
  // Two stem reduction cells at a quarter and a half of the first stage's filters.
  image previous = x;
  image current = cell(net, "stem0", reduction_cell(), x, x, filters / 4);
  std::vector<image> outputs = {previous, current};
  current = cell(net, "stem1", reduction_cell(), current, previous, filters / 2);
  outputs.push_back(current);
  std::int64_t f = filters;
  int index = 0;
  for (int stage = 0; stage < 3; ++stage) {
    if (stage > 0) {
      f *= 2;
      current = cell(net, "reduction" + std::to_string(stage), reduction_cell(), current,
                     outputs[outputs.size() - 2], f);
      outputs.push_back(current);
    }
    for (std::int64_t i = 0; i < cells_per_stage; ++i) {
      current = cell(net, "cell" + std::to_string(index++), normal_cell(), current,
                     outputs[outputs.size() - 2], f);
      outputs.push_back(current);
    }
  }
  relu(net, "final.relu", current);
  image_classifier(net, current, args.integer("classes"));
  return net;
}

}  // namespace tandem::sim::catalog
