// The iteration in order: zero the gradients, every layer's forward, every layer's backward in
// reverse, the optimizer step. Memory moves at operation boundaries: what an operation makes is
// allocated when it starts, its scratch freed when it ends, a layer's output and saved tensors
// when its backward ends (or, for outputs backward does not need, when their reader has run),
// each input gradient when the backward before it in the reverse order has consumed it.

#include "catalog_lowering.hpp"

#include <algorithm>

#include "catalog_cost.hpp"
#include "catalog_iteration.hpp"
#include "catalog_layers.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::sim::catalog {
namespace {

using memory::alloc_kind;

constexpr std::size_t step_alignment = 512;

class iteration_builder {
 public:
  explicit iteration_builder(const gpu_spec& gpu) : gpu_(gpu) {}

  // A step's at_s holds, until finish(), the number of operations run before it.
  void allocate(std::int64_t bytes, alloc_kind kind) {
    if (bytes <= 0) return;
    const auto size = rounded(bytes);
    profile_.steps.push_back({ran(), size, kind});
    live_ += size;
    most_live_ = std::max(most_live_, live_);
  }

  void release(std::int64_t bytes, alloc_kind kind) {
    if (bytes <= 0) return;
    const auto size = rounded(bytes);
    profile_.steps.push_back({ran(), -size, kind});
    live_ -= size;
  }

  void run(const std::string& name, op_kind kind, const work& w) {
    if (w.none()) return;
    const op_cost cost = cost_of(kind, w, gpu_);
    profile_.operations.push_back({name, 0, cost.fill, static_cast<std::size_t>(w.bytes)});
    costs_.push_back(cost);
  }

  /// Times the operations as a solo iteration runs them, host and device overlapped, and puts
  /// every step at the end of the operation before it.
  job_profile finish() {
    const auto completions = solo_completions(costs_, gpu_);
    double previous = 0;
    for (std::size_t i = 0; i < costs_.size(); ++i) {
      auto& op = profile_.operations[i];
      op.solo_s = completions[i] - previous;
      op.device_s = costs_[i].seconds;
      op.host_s = costs_[i].host_s + (i == 0 ? gpu_.iteration_host_s : 0);
      previous = completions[i];
    }
    for (auto& step : profile_.steps) {
      const auto before = static_cast<std::size_t>(step.at_s);
      step.at_s = before == 0 ? 0 : completions[before - 1];
    }
    profile_.peak_live_bytes = profile_.persistent_bytes() + static_cast<std::size_t>(most_live_);
    return std::move(profile_);
  }

  job_profile& profile() { return profile_; }

 private:
  static std::int64_t rounded(std::int64_t bytes) {
    return static_cast<std::int64_t>(align_up(static_cast<std::size_t>(bytes), step_alignment));
  }

  [[nodiscard]] double ran() const { return static_cast<double>(costs_.size()); }

  const gpu_spec& gpu_;
  job_profile profile_;
  std::vector<op_cost> costs_;
  std::int64_t live_ = 0;
  std::int64_t most_live_ = 0;
};

/// Parameters and buffers as the model builds them, then the gradients (made by the first
/// backward), then the optimizer's state (made by the first step).
std::vector<std::size_t> persistent_tensors(const network& net, optimizer_kind optimizer) {
  std::vector<std::size_t> tensors;
  std::vector<std::size_t> parameters;
  for (const auto& l : net.layers) {
    for (const auto e : l.parameters) {
      parameters.push_back(static_cast<std::size_t>(e * fp32_bytes));
      tensors.push_back(parameters.back());
    }
    for (const auto b : l.buffer_bytes) tensors.push_back(static_cast<std::size_t>(b));
  }
  for (int copy = 0; copy < 1 + optimizer_states(optimizer); ++copy) {
    tensors.insert(tensors.end(), parameters.begin(), parameters.end());
  }
  return tensors;
}

void forward_pass(iteration_builder& it, const network& net) {
  std::vector<std::vector<std::size_t>> released_after(net.layers.size());
  for (std::size_t j = 0; j < net.layers.size(); ++j) {
    const auto after = net.layers[j].output_freed_after;
    if (after == kept_for_backward) continue;
    TANDEM_ASSERT(after > j && after < net.layers.size(),
                  net.layers[j].name + "'s output is freed after a layer that does not follow it");
    released_after[after].push_back(j);
  }
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const layer& l = net.layers[i];
    const bool kept = l.output_freed_after == kept_for_backward;
    it.allocate(l.output_bytes, kept ? alloc_kind::feature_map : alloc_kind::temporary);
    for (std::int64_t k = 0; k < l.saved_tensors; ++k)
      it.allocate(l.saved_bytes / l.saved_tensors, alloc_kind::feature_map);
    it.allocate(l.forward_scratch_bytes, alloc_kind::temporary);
    it.run(forward_name(l), l.kind, l.forward);
    it.release(l.forward_scratch_bytes, alloc_kind::temporary);
    for (const auto j : released_after[i]) {
      it.release(net.layers[j].output_bytes, alloc_kind::temporary);
    }
  }
}

void backward_pass(iteration_builder& it, const network& net) {
  std::int64_t pending_gradient = 0;  // made by the previous backward, consumed by this one
  for (auto i = net.layers.size(); i-- > 0;) {
    const layer& l = net.layers[i];
    it.allocate(l.input_gradient_bytes, alloc_kind::gradient);
    it.allocate(l.backward_scratch_bytes, alloc_kind::temporary);
    it.run(backward_name(l), l.kind, l.backward);
    it.release(l.backward_scratch_bytes, alloc_kind::temporary);
    it.release(pending_gradient, alloc_kind::gradient);
    pending_gradient = l.input_gradient_bytes;
    for (std::int64_t k = 0; k < l.saved_tensors; ++k)
      it.release(l.saved_bytes / l.saved_tensors, alloc_kind::feature_map);
    if (l.output_freed_after == kept_for_backward) {
      it.release(l.output_bytes, alloc_kind::feature_map);
    }
  }
  it.release(pending_gradient, alloc_kind::gradient);
}

/// zero_grad or the optimizer's step, with its scratch.
void run_step(iteration_builder& it, const iteration_op& op) {
  it.allocate(op.scratch_bytes, alloc_kind::temporary);
  it.run(op.name, op_kind::optimizer, op.cost);
  it.release(op.scratch_bytes, alloc_kind::temporary);
}

}  // namespace

job_profile lower(const network& net, const std::string& model, optimizer_kind optimizer,
                  const gpu_spec& gpu) {
  iteration_builder it(gpu);
  job_profile& profile = it.profile();
  profile.model = model;
  profile.batch_size = net.batch;
  profile.source = "generated for " + gpu.name;
  profile.persistent_tensors = persistent_tensors(net, optimizer);
  // The gradients stay allocated between iterations and are zeroed in place.
  run_step(it, zero_grad(net));
  forward_pass(it, net);
  backward_pass(it, net);
  run_step(it, optimizer_step(net, optimizer));
  return it.finish();
}

}  // namespace tandem::sim::catalog
