#include "catalog_recurrent.hpp"

#include <algorithm>

#include "catalog_layers.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t max_recurrent_ops = 1024;

double real(std::int64_t value) {
  return static_cast<double>(value);
}

work step_work(double flops, double bytes, double blocks, int kernels) {
  work w;
  w.flops = flops;
  w.bytes = bytes;
  w.blocks = std::max(1.0, blocks);
  w.kernels = kernels;
  return w;
}

/// The projection of the whole input sequence onto `gates` x hidden pre-activations (per
/// direction) in one GEMM; its backward also computes every weight gradient of the layer, over
/// the whole sequence at once, as cuDNN does.
void input_projection(network& net, const std::string& name, const recurrent_spec& spec,
                      std::int64_t gates, std::int64_t recurrent_weights) {
  const std::int64_t rows = net.batch * spec.steps;
  const std::int64_t width = gates * spec.hidden * spec.directions;
  const double forward_flops = 2.0 * real(rows) * real(spec.input) * real(width);
  const double recurrent_flops = 2.0 * real(rows) * real(recurrent_weights * spec.directions);
  layer l;
  l.name = name + ".input";
  l.kind = op_kind::matmul;
  const double in_bytes = real(rows * spec.input * fp32_bytes);
  const double out_bytes = real(rows * width * fp32_bytes);
  const double weight_bytes = real((spec.input * width + recurrent_weights) * fp32_bytes);
  l.forward =
      step_work(forward_flops, in_bytes + out_bytes + weight_bytes, gemm_tiles(rows, width), 1);
  // Input gradient, input weights' gradient, recurrent weights' gradient (all steps at once).
  l.backward =
      step_work(2 * forward_flops + recurrent_flops,
                2 * in_bytes + 3 * out_bytes + 2 * weight_bytes, gemm_tiles(rows, width), 3);
  l.output_bytes = rows * width * fp32_bytes;
  l.input_gradient_bytes = rows * spec.input * fp32_bytes;
  net.add(std::move(l));
}

/// Adds one layer per `spec.steps_per_op` time steps, from `per_step` (one step's costs and
/// memory); the projection's output is freed once the last step has read it.
void add_steps(network& net, const std::string& name, const recurrent_spec& spec,
               const layer& per_step) {
  const std::size_t projection = net.last_index();
  for (std::int64_t first = 0; first < spec.steps; first += spec.steps_per_op) {
    const std::int64_t count = std::min(spec.steps_per_op, spec.steps - first);
    const double n = real(count);
    layer l = per_step;
    l.name = name + ".t" + std::to_string(first);
    l.reads_parameters_of = projection;
    l.forward.flops *= n;
    l.forward.bytes *= n;
    l.forward.kernels *= static_cast<int>(count);
    l.backward.flops *= n;
    l.backward.bytes *= n;
    l.backward.kernels *= static_cast<int>(count);
    l.output_bytes *= count;
    l.saved_bytes *= count;
    l.input_gradient_bytes *= count;
    net.add(std::move(l));
  }
  net.release_after_last(projection);
}

}  // namespace

std::int64_t steps_per_op_for(std::int64_t steps, std::int64_t layers) {
  const std::int64_t total = steps * layers;
  return std::max<std::int64_t>(1, (total + max_recurrent_ops - 1) / max_recurrent_ops);
}

void lstm(network& net, const std::string& name, const recurrent_spec& spec) {
  const std::int64_t b = net.batch;
  const std::int64_t h = spec.hidden;
  const std::int64_t d = spec.directions;
  input_projection(net, name, spec, 4, 4 * h * h);
  for (std::int64_t direction = 0; direction < d; ++direction) {
    net.layers.back().parameters.insert(net.layers.back().parameters.end(),
                                        {4 * h * spec.input, 4 * h * h, 4 * h, 4 * h});
  }
  layer step;
  step.kind = op_kind::recurrent;
  const double gemm = 2.0 * real(b * h * 4 * h * d);
  const double weights = real(4 * h * h * d * fp32_bytes);
  const double states = real(b * h * d * fp32_bytes);
  // A GEMM on h(t-1), then one fused kernel for the gates and the cell update.
  const int forward_ops =
      spec.forward_ops_per_step > 0 ? spec.forward_ops_per_step * static_cast<int>(d) : 2;
  const int backward_ops =
      spec.backward_ops_per_step > 0 ? spec.backward_ops_per_step * static_cast<int>(d) : 2;
  step.forward = step_work(gemm + 10.0 * real(b * h * d), weights + 14 * states,
                           gemm_tiles(b, 4 * h) * real(d), forward_ops);
  step.backward = step_work(gemm + 12.0 * real(b * h * d), weights + 20 * states,
                            gemm_tiles(b, 4 * h) * real(d), backward_ops);
  step.output_bytes = b * h * d * fp32_bytes;              // h(t)
  step.saved_bytes = 5 * b * h * d * fp32_bytes;           // four gates and c(t)
  step.input_gradient_bytes = 4 * b * h * d * fp32_bytes;  // the gates' gradients
  add_steps(net, name, spec, step);
}

void rhn(network& net, const std::string& name, const recurrent_spec& spec, std::int64_t depth) {
  const std::int64_t b = net.batch;
  const std::int64_t h = spec.hidden;
  input_projection(net, name, spec, 2, depth * 2 * h * h);
  auto& parameters = net.layers.back().parameters;
  parameters.push_back(2 * h * spec.input);  // W_H and W_T of the first micro-layer
  for (std::int64_t micro = 0; micro < depth; ++micro) {
    parameters.insert(parameters.end(), {2 * h * h, 2 * h});  // R_H and R_T, their biases
  }
  layer step;
  step.kind = op_kind::recurrent;
  const double micro_gemm = 2.0 * real(b * h * 2 * h);
  const double weights = real(2 * h * h * fp32_bytes);
  const double states = real(b * h * fp32_bytes);
  const double micro_layers = real(depth);
  const int kernels = static_cast<int>(3 * depth);  // GEMM, gates, highway update
  step.forward = step_work(micro_layers * (micro_gemm + 8.0 * real(b * h)),
                           micro_layers * (weights + 8 * states), gemm_tiles(b, 2 * h), kernels);
  step.backward = step_work(micro_layers * (micro_gemm + 12.0 * real(b * h)),
                            micro_layers * (weights + 12 * states), gemm_tiles(b, 2 * h), kernels);
  step.output_bytes = b * h * fp32_bytes;
  step.saved_bytes = depth * 3 * b * h * fp32_bytes;  // h, t and s of every micro-layer
  step.input_gradient_bytes = depth * 2 * b * h * fp32_bytes;
  add_steps(net, name, spec, step);
}

}  // namespace tandem::sim::catalog
