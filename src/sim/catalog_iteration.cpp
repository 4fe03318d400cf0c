// zero_grad and the optimizer's step as PyTorch's foreach implementations run them: a few
// multi-tensor-apply launches over every parameter, each pass reading and writing FP32 tensors.

#include "catalog_iteration.hpp"

#include <algorithm>

#include "catalog_layers.hpp"

namespace tandem::sim::catalog {
namespace {

/// Tensors one multi-tensor-apply launch of PyTorch's foreach optimizers takes, and elements
/// (its launches also split large tensors into chunks).
constexpr std::int64_t tensors_per_launch = 110;
constexpr std::int64_t elements_per_launch = std::int64_t{1} << 24;

struct parameter_totals {
  std::int64_t tensors = 0;
  std::int64_t elements = 0;
};

parameter_totals totals(const network& net) {
  parameter_totals t;
  for (const auto& l : net.layers) {
    t.tensors += static_cast<std::int64_t>(l.parameters.size());
    for (const auto e : l.parameters) t.elements += e;
  }
  return t;
}

/// A foreach pass over every parameter reading and writing `bytes_per_element` per element.
work foreach_pass(const parameter_totals& p, double bytes_per_element, int passes) {
  work w;
  w.flops = 4.0 * static_cast<double>(p.elements);
  w.bytes = bytes_per_element * static_cast<double>(p.elements);
  w.blocks = elementwise_blocks(p.elements);
  const std::int64_t launches =
      std::max({std::int64_t{1}, (p.tensors + tensors_per_launch - 1) / tensors_per_launch,
                (p.elements + elements_per_launch - 1) / elements_per_launch});
  w.kernels = passes * static_cast<int>(launches);
  return w;
}

}  // namespace

int optimizer_states(optimizer_kind optimizer) {
  return optimizer == optimizer_kind::adam ? 2 : 1;
}

iteration_op zero_grad(const network& net) {
  return {"zero_grad", foreach_pass(totals(net), 1.0 * fp32_bytes, 1), 0};
}

iteration_op optimizer_step(const network& net, optimizer_kind optimizer) {
  const parameter_totals p = totals(net);
  const bool sgd = optimizer == optimizer_kind::sgd;
  // SGD: momentum = 0.9 m + g; p -= lr m: reads p, g, m and writes m, p. Adam's foreach
  // implementation also makes sqrt(v) for every parameter at once.
  iteration_op step{
      "optimizer.step",
      sgd ? foreach_pass(p, 5.0 * fp32_bytes, 3) : foreach_pass(p, 9.0 * fp32_bytes, 8),
      sgd ? 0 : p.elements * fp32_bytes};
  if (net.per_variable_step) step.cost.kernels = static_cast<int>(p.tensors);
  return step;
}

std::string forward_name(const layer& l) {
  return l.name + ".forward";
}

std::string backward_name(const layer& l) {
  return l.name + ".backward";
}

}  // namespace tandem::sim::catalog
