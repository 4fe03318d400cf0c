// The layer builders. Byte counts follow what the kernels read and write once each (caches
// ignored); FLOPs count a multiply-add as two. Backward passes compute the gradient with respect
// to the input (when it needs one) and to the weights, each about the forward's work.

#include "catalog_layers.hpp"

#include <algorithm>
#include <cmath>

#include "tandem/common/units.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t gemm_tile = 64;
constexpr std::int64_t elements_per_block = 1024;
/// cuDNN's workspace for a spatial convolution, at most: the heuristics PyTorch uses by default
/// pick algorithms with a modest workspace.
constexpr std::int64_t max_conv_workspace = static_cast<std::int64_t>(64 * MiB);
/// cuDNN runs 3x3 stride-1 convolutions of enough channels with Winograd's algorithm, which
/// needs 2.25x (F(2x2,3x3)) to 4x (F(4x4,3x3)) fewer multiplications than the direct one; with
/// its transforms it does about half the direct arithmetic.
constexpr double winograd_saving = 2.0;
constexpr std::int64_t winograd_min_channels = 16;

double real(std::int64_t value) {
  return static_cast<double>(value);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

work make_work(double flops, double bytes, double blocks, int kernels) {
  work w;
  w.flops = flops;
  w.bytes = bytes;
  w.blocks = std::max(1.0, blocks);
  w.kernels = kernels;
  return w;
}

/// A layer over `elements` whose forward and backward each make a number of passes (reads plus
/// writes) over the data: what activations, dropout and normalisation share.
layer pointwise(const std::string& name, op_kind kind, std::int64_t elements, double forward_passes,
                double backward_passes) {
  layer l;
  l.name = name;
  l.kind = kind;
  const double bytes = real(elements * fp32_bytes);
  l.forward = make_work(real(elements), forward_passes * bytes, elementwise_blocks(elements), 1);
  l.backward = make_work(real(elements), backward_passes * bytes, elementwise_blocks(elements), 1);
  l.output_bytes = elements * fp32_bytes;
  l.input_gradient_bytes = elements * fp32_bytes;
  return l;
}

image pool(network& net, const std::string& name, image in, std::int64_t kernel,
           std::int64_t stride, std::int64_t pad, bool keeps_indices, bool ceil_mode = false) {
  const auto side = ceil_mode ? side_after_ceil : side_after;
  const image out{in.channels, side(in.height, kernel, stride, pad),
                  side(in.width, kernel, stride, pad)};
  const std::int64_t in_elements = net.batch * in.elements();
  const std::int64_t out_elements = net.batch * out.elements();
  layer l;
  l.name = name;
  l.kind = op_kind::pooling;
  const double indices = keeps_indices ? real(out_elements * index_bytes) : 0.0;
  l.forward = make_work(real(out_elements * kernel * kernel),
                        real((in_elements + out_elements) * fp32_bytes) + indices,
                        elementwise_blocks(out_elements), 1);
  // Backward zeroes the input's gradient and scatters the output's into it.
  l.backward = make_work(real(out_elements * kernel * kernel),
                         real((out_elements + 2 * in_elements) * fp32_bytes) + indices,
                         elementwise_blocks(in_elements), 2);
  l.output_bytes = out_elements * fp32_bytes;
  l.saved_bytes = keeps_indices ? out_elements * index_bytes : 0;
  l.input_gradient_bytes = in_elements * fp32_bytes;
  net.add(std::move(l));
  return out;
}

}  // namespace

std::int64_t scaled_channels(std::int64_t channels, double multiplier) {
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(channels) * multiplier));
}

double gemm_tiles(std::int64_t m, std::int64_t n) {
  return real(ceil_div(m, gemm_tile) * ceil_div(n, gemm_tile));
}

double elementwise_blocks(std::int64_t elements) {
  return real(ceil_div(elements, elements_per_block));
}

conv_spec square_conv(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
                      std::int64_t groups) {
  conv_spec spec;
  spec.out_channels = out_channels;
  spec.kernel_h = spec.kernel_w = kernel;
  spec.stride = stride;
  spec.pad_h = spec.pad_w = kernel / 2;
  spec.groups = groups;
  return spec;
}

conv_spec rect_conv(std::int64_t out_channels, std::int64_t kernel_h, std::int64_t kernel_w) {
  conv_spec spec;
  spec.out_channels = out_channels;
  spec.kernel_h = kernel_h;
  spec.kernel_w = kernel_w;
  spec.pad_h = kernel_h / 2;
  spec.pad_w = kernel_w / 2;
  return spec;
}

conv_spec valid_conv(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride) {
  conv_spec spec = square_conv(out_channels, kernel, stride);
  spec.pad_h = spec.pad_w = 0;
  return spec;
}

conv_spec first_layer(conv_spec spec) {
  spec.input_needs_gradient = false;
  return spec;
}

std::int64_t side_after(std::int64_t side, std::int64_t kernel, std::int64_t stride,
                        std::int64_t pad) {
  return (side + 2 * pad - kernel) / stride + 1;
}

std::int64_t side_after_ceil(std::int64_t side, std::int64_t kernel, std::int64_t stride,
                             std::int64_t pad) {
  const std::int64_t span = side + 2 * pad - kernel;
  if (span + stride <= 0) return 0;  // not even the first window fits
  std::int64_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= side + pad) --out;  // the last window would start in the padding
  return out;
}

image input_images(network& net, image shape) {
  layer l;
  l.name = "batch";
  l.kind = op_kind::transfer;
  l.output_bytes = net.batch * shape.elements() * fp32_bytes;
  l.saved_bytes = net.batch * index_bytes;  // the labels
  l.forward = make_work(0, real(l.output_bytes + l.saved_bytes), 1, 2);
  net.add(std::move(l));
  return shape;
}

void input_tokens(network& net, std::int64_t tokens, std::int64_t targets) {
  layer l;
  l.name = "batch";
  l.kind = op_kind::transfer;
  l.output_bytes = net.batch * tokens * index_bytes;
  l.saved_bytes = net.batch * targets * index_bytes;
  l.forward = make_work(0, real(l.output_bytes + l.saved_bytes), 1, 2);
  net.add(std::move(l));
}

void input_frames(network& net, std::int64_t tokens, std::int64_t frame_values) {
  layer l;
  l.name = "batch";
  l.kind = op_kind::transfer;
  l.output_bytes = net.batch * tokens * index_bytes;
  l.saved_bytes = net.batch * frame_values * fp32_bytes;  // the target spectrograms
  l.forward = make_work(0, real(l.output_bytes + l.saved_bytes), 1, 2);
  net.add(std::move(l));
}

image conv2d(network& net, const std::string& name, image in, const conv_spec& spec) {
  const image out{spec.out_channels, side_after(in.height, spec.kernel_h, spec.stride, spec.pad_h),
                  side_after(in.width, spec.kernel_w, spec.stride, spec.pad_w)};
  const std::int64_t in_elements = net.batch * in.elements();
  const std::int64_t out_elements = net.batch * out.elements();
  const std::int64_t per_output = in.channels / spec.groups * spec.kernel_h * spec.kernel_w;
  const std::int64_t weights = spec.out_channels * per_output;
  const bool depthwise = spec.groups > 1 && spec.groups == in.channels;
  const bool spatial = spec.kernel_h * spec.kernel_w > 1;

  layer l;
  l.name = name;
  l.kind = depthwise ? op_kind::depthwise : op_kind::convolution;
  l.parameters = {weights};
  if (spec.bias) l.parameters.push_back(spec.out_channels);
  const double blocks = depthwise ? elementwise_blocks(out_elements)
                                  : gemm_tiles(net.batch * out.height * out.width, out.channels);
  const bool winograd = spec.kernel_h == 3 && spec.kernel_w == 3 && spec.stride == 1 &&
                        spec.groups == 1 && in.channels >= winograd_min_channels;
  const double flops =
      2.0 * real(out_elements) * real(per_output) / (winograd ? winograd_saving : 1.0);
  const double in_bytes = real(in_elements * fp32_bytes);
  const double out_bytes = real(out_elements * fp32_bytes);
  const double weight_bytes = real(weights * fp32_bytes);
  l.forward = make_work(flops, in_bytes + out_bytes + weight_bytes, blocks, 1);
  // Weight gradient (input, output gradient, weights) and, unless first, the data gradient.
  const bool data = spec.input_needs_gradient;
  l.backward = make_work(
      flops * (data ? 2.0 : 1.0),
      in_bytes + out_bytes + 2 * weight_bytes + (data ? out_bytes + weight_bytes + in_bytes : 0.0),
      blocks, data ? 2 : 1);
  l.output_bytes = out_elements * fp32_bytes;
  l.input_gradient_bytes = data ? in_elements * fp32_bytes : 0;
  if (spatial && !depthwise) {
    const std::int64_t workspace =
        std::min(max_conv_workspace, std::max(in_elements, out_elements) * fp32_bytes / 4);
    l.forward_scratch_bytes = workspace;
    l.backward_scratch_bytes = workspace;
  }
  net.add(std::move(l));
  return out;
}

void batch_norm(network& net, const std::string& name, image shape, activation after) {
  const std::int64_t elements = net.batch * shape.elements();
  if (after == activation::relu6) {
    // hardtanh's backward reads the normalised map, so it stays until then.
    batch_norm(net, name, shape, activation::none);
    activation_layer(net, name + ".relu6", elements);
    return;
  }
  const bool activates = after != activation::none;
  // Statistics and normalisation read the input twice and write once; the activation reads
  // and writes once more (in place or not). Backward reads input, output gradient (twice) and
  // writes the input gradient, plus the activation's own gradient.
  const double forward_passes = 3.0 + (activates ? 2.0 : 0.0);
  const double backward_passes = 4.0 + (activates ? 3.0 : 0.0);
  const bool new_map = after == activation::relu || after == activation::tanh;
  layer l = pointwise(name, op_kind::normalization, elements, forward_passes, backward_passes);
  l.forward.kernels = activates ? 3 : 2;
  l.backward.kernels = activates ? 3 : 2;
  l.forward.flops = real(elements) * (activates ? 9.0 : 8.0);
  l.backward.flops = real(elements) * 12.0;
  l.parameters = {shape.channels, shape.channels};
  l.buffer_bytes = {shape.channels * fp32_bytes, shape.channels * fp32_bytes, index_bytes};
  l.saved_bytes = 2 * shape.channels * fp32_bytes;  // batch mean and inverse deviation
  l.saved_tensors = 2;
  l.saved_before_output = true;
  if (new_map) l.forward_scratch_bytes = elements * fp32_bytes;  // the normalised map
  if (activates) l.backward_scratch_bytes = elements * fp32_bytes;
  net.add(std::move(l));
}

image conv_bn(network& net, const std::string& name, image in, const conv_spec& spec,
              activation after) {
  const image out = conv2d(net, name, in, spec);
  batch_norm(net, name + "_bn", out, after);
  return out;
}

image max_pool(network& net, const std::string& name, image in, std::int64_t kernel,
               std::int64_t stride, std::int64_t pad) {
  return pool(net, name, in, kernel, stride, pad, true);
}

image max_pool_ceil(network& net, const std::string& name, image in, std::int64_t kernel,
                    std::int64_t stride, std::int64_t pad) {
  return pool(net, name, in, kernel, stride, pad, true, true);
}

image average_pool(network& net, const std::string& name, image in, std::int64_t kernel,
                   std::int64_t stride, std::int64_t pad) {
  return pool(net, name, in, kernel, stride, pad, false);
}

void global_average_pool(network& net, const std::string& name, image in) {
  const std::int64_t in_elements = net.batch * in.elements();
  const std::int64_t out_elements = net.batch * in.channels;
  layer l;
  l.name = name;
  l.kind = op_kind::pooling;
  const double bytes = real((in_elements + out_elements) * fp32_bytes);
  l.forward = make_work(real(in_elements), bytes, real(out_elements), 1);
  l.backward = make_work(real(in_elements), bytes, elementwise_blocks(in_elements), 1);
  l.output_bytes = out_elements * fp32_bytes;
  l.input_gradient_bytes = in_elements * fp32_bytes;
  net.add(std::move(l));
}

void linear(network& net, const std::string& name, std::int64_t rows, std::int64_t in,
            std::int64_t out, linear_options options) {
  const double flops = 2.0 * real(rows) * real(in) * real(out);
  const double in_bytes = real(rows * in * fp32_bytes);
  const double out_bytes = real(rows * out * fp32_bytes);
  const double weight_bytes = real(in * out * fp32_bytes);
  const bool data = options.input_needs_gradient;
  layer l;
  l.name = name;
  l.kind = op_kind::matmul;
  if (options.tied_to == no_layer) l.parameters.push_back(in * out);
  l.reads_parameters_of = options.tied_to;
  if (options.bias) l.parameters.push_back(out);
  const double blocks = gemm_tiles(rows, out);
  l.forward = make_work(flops, in_bytes + out_bytes + weight_bytes, blocks, 1);
  l.backward = make_work(
      flops * (data ? 2.0 : 1.0),
      in_bytes + out_bytes + 2 * weight_bytes + (data ? in_bytes + out_bytes + weight_bytes : 0.0),
      blocks, (data ? 2 : 1) + (options.bias ? 1 : 0));
  l.output_bytes = rows * out * fp32_bytes;
  l.input_gradient_bytes = data ? rows * in * fp32_bytes : 0;
  net.add(std::move(l));
}

void activation_layer(network& net, const std::string& name, std::int64_t elements) {
  layer l = pointwise(name, op_kind::elementwise, elements, 2.0, 3.0);
  l.forward.flops = l.backward.flops = 8.0 * real(elements);  // GELU and tanh cost a few
  net.add(std::move(l));
}

void add(network& net, const std::string& name, std::int64_t elements) {
  layer l = pointwise(name, op_kind::elementwise, elements, 3.0, 0.0);
  l.backward = work{};
  l.input_gradient_bytes = 0;
  net.add(std::move(l));
}

void concat(network& net, const std::string& name, std::int64_t elements) {
  layer l = pointwise(name, op_kind::elementwise, elements, 2.0, 0.0);
  l.forward.flops = 0;
  l.backward = work{};
  l.input_gradient_bytes = 0;
  net.add(std::move(l));
}

void layer_norm(network& net, const std::string& name, std::int64_t rows, std::int64_t width) {
  layer l = pointwise(name, op_kind::normalization, rows * width, 2.0, 4.0);
  l.forward.flops = 8.0 * real(rows * width);
  l.backward.flops = 12.0 * real(rows * width);
  l.backward.kernels = 2;  // input gradient, then the weights' (a reduction over rows)
  l.parameters = {width, width};
  l.saved_bytes = 2 * rows * fp32_bytes;  // mean and inverse deviation per row
  l.saved_tensors = 2;
  net.add(std::move(l));
}

void embedding(network& net, const std::string& name, std::int64_t rows, std::int64_t vocabulary,
               std::int64_t width) {
  const std::int64_t gathered = rows * width;
  const std::int64_t table = vocabulary * width;
  layer l;
  l.name = name;
  l.kind = op_kind::embedding;
  l.parameters = {table};
  l.forward = make_work(0, real(2 * gathered * fp32_bytes + rows * index_bytes),
                        elementwise_blocks(gathered), 1);
  // PyTorch's dense embedding backward builds a whole-table gradient (zeroed, then scattered
  // into) and adds it to the parameter's .grad: three passes over the table.
  l.backward = make_work(real(gathered), real((2 * gathered + 4 * table) * fp32_bytes),
                         elementwise_blocks(table), 3);
  l.output_bytes = gathered * fp32_bytes;
  l.backward_scratch_bytes = table * fp32_bytes;
  net.add(std::move(l));
}

void dropout(network& net, const std::string& name, std::int64_t elements) {
  layer l = pointwise(name, op_kind::elementwise, elements, 2.0, 2.0);
  l.forward.bytes += real(elements * mask_bytes);
  l.backward.bytes += real(elements * mask_bytes);
  l.saved_bytes = elements * mask_bytes;
  l.random = true;
  net.add(std::move(l));
}

void cross_entropy(network& net, const std::string& name, std::int64_t rows, std::int64_t classes) {
  const std::int64_t elements = rows * classes;
  layer l = pointwise(name, op_kind::loss, elements, 3.0, 4.0);
  l.forward.flops = 5.0 * real(elements);
  l.forward.kernels = 2;        // log_softmax, nll_loss
  l.backward.kernels = 3;       // nll_loss backward (zeros and scatter), log_softmax backward
  l.output_bytes = fp32_bytes;  // the loss
  l.saved_bytes = elements * fp32_bytes;             // log_softmax's output
  l.backward_scratch_bytes = elements * fp32_bytes;  // nll_loss's gradient
  net.add(std::move(l));
}

void mse_loss(network& net, const std::string& name, std::int64_t elements) {
  layer l = pointwise(name, op_kind::loss, elements, 2.0, 3.0);
  l.forward.kernels = 2;
  l.output_bytes = fp32_bytes;
  net.add(std::move(l));
}

void image_classifier(network& net, image features, std::int64_t classes) {
  global_average_pool(net, "pool", features);
  linear(net, "classifier", net.batch, features.channels, classes);
  net.release_last_after_next();  // log_softmax keeps its own output
  cross_entropy(net, "loss", net.batch, classes);
}

}  // namespace tandem::sim::catalog
