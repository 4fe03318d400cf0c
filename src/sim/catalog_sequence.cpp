// The iteration's access sequence, operation for operation the lowering's (catalog_lowering.cpp):
// zero_grad, every layer's forward, every layer's backward in reverse, the optimizer's step,
// each timed by the same cost model (a direction without work is no operation in either). Each
// tensor lives as the lowering allocates and frees it, told as the operation that creates it,
// the operations that read it and, where the lowering frees it later than its last reader, the
// operation after which it goes. So the sequence's vanilla peak is the profile's, less the
// lowering's rounding of each allocation to 512 bytes (the sequence keeps exact sizes).
//
// What reads what, where the catalogue only says how long things live (docs/sim-models.md,
// "Tensor access sequences"):
// * a layer's output is read by the next layer's forward (the catalogue's layers are a chain;
//   branches and skip connections read outputs it does not name) and, when backward needs it,
//   by its own backward; an output only its readers' forwards need is `temporary`;
// * what a layer saves besides is read by its own backward;
// * the gradient with respect to a layer's input is read by the backward of the layer before;
// * a parameter is read by the forward and backward of its layer and of the layers that share
//   it (a recurrence's steps, later decoder frames, tied layers: `reads_parameters_of`), and by
//   the optimizer's step;
// * its gradient is kept between iterations and zeroed in place, as the lowering keeps it: made
//   by zero_grad, read (accumulated into) by the backward of its layer and of the layers that
//   share it, read by the step. A recurrence's steps leave the weight gradients to the input
//   projection's backward (cuDNN's schedule), so their reads are one too many: that keeps the
//   gradient resident longer than needed, never too short;
// * the optimizer's state is read by the step; buffers (batch norm's statistics) are
//   other_bytes, held throughout and read by no operation the planners could move.

#include "catalog_sequence.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "catalog_cost.hpp"
#include "catalog_layers.hpp"
#include "tandem/common/error.hpp"

namespace tandem::sim::catalog {
namespace {

namespace fp = footprint;

/// No operation: a direction without work, or a tensor that exists before the iteration.
constexpr std::size_t no_op = std::numeric_limits<std::size_t>::max();

fp::op_kind kind_of(op_kind kind) {
  switch (kind) {
    case op_kind::convolution:
    case op_kind::depthwise:
      return fp::op_kind::convolution;
    case op_kind::matmul:
    case op_kind::recurrent:
    case op_kind::attention:
      return fp::op_kind::matmul;
    case op_kind::normalization:
      return fp::op_kind::normalization;
    case op_kind::pooling:
      return fp::op_kind::pooling;
    case op_kind::elementwise:
      return fp::op_kind::elementwise;
    case op_kind::optimizer:
      return fp::op_kind::optimizer;
    case op_kind::embedding:
    case op_kind::loss:
    case op_kind::transfer:
      break;
  }
  return fp::op_kind::other;
}

/// The iteration's operations as indices into the sequence, per layer; and, per layer, the last
/// operation that has run when the lowering ends the layer's forward or backward, which is when
/// it frees what that direction lets go (the layer's own operation, or the one before when the
/// direction does no work).
struct schedule {
  std::size_t zero_grad = no_op;
  std::vector<std::size_t> forward;
  std::vector<std::size_t> backward;
  std::vector<std::size_t> forward_end;
  std::vector<std::size_t> backward_end;
  std::size_t step = no_op;
};

class sequence_builder {
 public:
  sequence_builder(fp::access_sequence& sequence, const gpu_spec& gpu)
      : sequence_(sequence), gpu_(gpu) {}

  /// Appends the operation when `w` does work; its index, or no_op.
  std::size_t run(std::string name, fp::phase where, op_kind kind, const work& w, bool random) {
    if (w.none()) return no_op;
    // Timed as the lowering times it, starts summed in the same order: the same iteration.
    const op_cost cost = cost_of(kind, w, gpu_);
    fp::operation op;
    op.name = std::move(name);
    op.where = where;
    op.kind = kind_of(kind);
    op.random = random;
    sequence_.operations.push_back(std::move(op));
    costs_.push_back(cost);
    return sequence_.operations.size() - 1;
  }

  /// Times the operations as the lowering does: each from the device completion of the one
  /// before to its own in a solo iteration, host and device overlapped.
  void finish_times() {
    const auto completions = solo_completions(costs_, gpu_);
    double previous = 0;
    for (std::size_t i = 0; i < costs_.size(); ++i) {
      sequence_.operations[i].start_s = previous;
      sequence_.operations[i].duration_s = completions[i] - previous;
      previous = completions[i];
    }
  }

  /// The operation run last (zero_grad runs first, always: every network has a parameter).
  [[nodiscard]] std::size_t last() const {
    TANDEM_ASSERT(!sequence_.operations.empty(), "no operation has run yet");
    return sequence_.operations.size() - 1;
  }

  /// Adds a tensor of `bytes` (nothing for none) made by `created_by` (no_op: persistent), read
  /// by `readers` (no_op entries are directions without work), that the lowering frees once
  /// `released_after` has run (no_op: never).
  void add(std::string name, std::int64_t bytes, fp::tensor_role role, std::size_t created_by,
           std::vector<std::size_t> readers, std::size_t released_after) {
    if (bytes <= 0) return;
    std::erase(readers, no_op);
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    const bool persistent =
        role == fp::tensor_role::parameter || role == fp::tensor_role::optimizer_state;
    TANDEM_ASSERT(persistent == (created_by == no_op),
                  name + ": a transient tensor needs the operation that makes it");
    TANDEM_ASSERT(readers.empty() || created_by == no_op || readers.front() > created_by,
                  name + " is read before it is made");
    fp::tensor t;
    t.name = std::move(name);
    t.bytes = static_cast<std::size_t>(bytes);
    t.role = role;
    if (!persistent) {
      t.created_by = created_by;
      const std::size_t held_to = readers.empty() ? created_by : readers.back();
      TANDEM_ASSERT(released_after != no_op && released_after >= held_to,
                    t.name + " is freed before its last reader");
      if (released_after > held_to) t.freed_after = released_after;
    }
    t.read_by = std::move(readers);
    sequence_.tensors.push_back(std::move(t));
  }

 private:
  fp::access_sequence& sequence_;
  const gpu_spec& gpu_;
  std::vector<op_cost> costs_;
};

schedule run_iteration(sequence_builder& b, const network& net, const iteration_op& zero,
                       const iteration_op& step) {
  const std::size_t n = net.layers.size();
  schedule s;
  s.forward.resize(n);
  s.backward.resize(n);
  s.forward_end.resize(n);
  s.backward_end.resize(n);
  // zero_grad is the optimizer's (optimizer.zero_grad()), so it is in the optimizer's phase,
  // though it opens the iteration.
  s.zero_grad = b.run(zero.name, fp::phase::optimizer, op_kind::optimizer, zero.cost, false);
  for (std::size_t i = 0; i < n; ++i) {
    const layer& l = net.layers[i];
    s.forward[i] = b.run(forward_name(l), fp::phase::forward, l.kind, l.forward, l.random);
    s.forward_end[i] = b.last();
  }
  for (auto i = n; i-- > 0;) {
    const layer& l = net.layers[i];
    // The backward replays no random draw: it reads the mask its forward saved.
    s.backward[i] = b.run(backward_name(l), fp::phase::backward, l.kind, l.backward, false);
    s.backward_end[i] = b.last();
  }
  s.step = b.run(step.name, fp::phase::optimizer, op_kind::optimizer, step.cost, false);
  return s;
}

/// The names PyTorch gives an optimizer's state per parameter.
std::vector<std::string> state_names(optimizer_kind optimizer) {
  if (optimizer == optimizer_kind::adam) return {"exp_avg", "exp_avg_sq"};
  return {"momentum_buffer"};
}

/// Per layer, the layers that read its parameters besides itself.
std::vector<std::vector<std::size_t>> sharers_of(const network& net) {
  std::vector<std::vector<std::size_t>> sharers(net.layers.size());
  for (std::size_t j = 0; j < net.layers.size(); ++j) {
    const std::size_t owner = net.layers[j].reads_parameters_of;
    if (owner == no_layer) continue;
    TANDEM_ASSERT(owner < net.layers.size() && owner != j,
                  net.layers[j].name + " reads the parameters of a layer that does not exist");
    sharers[owner].push_back(j);
  }
  return sharers;
}

void add_layer_tensors(sequence_builder& b, const network& net, std::size_t i, const schedule& s,
                       const std::vector<std::size_t>& sharers, optimizer_kind optimizer) {
  using role = fp::tensor_role;
  const layer& l = net.layers[i];
  const std::size_t forward = s.forward[i];
  const std::size_t backward = s.backward[i];

  std::vector<std::size_t> parameter_readers = {forward, backward, s.step};
  std::vector<std::size_t> gradient_readers = {backward, s.step};
  for (const auto j : sharers) {
    parameter_readers.insert(parameter_readers.end(), {s.forward[j], s.backward[j]});
    gradient_readers.push_back(s.backward[j]);
  }
  for (std::size_t k = 0; k < l.parameters.size(); ++k) {
    const std::string name = l.name + ".parameter" + std::to_string(k);
    const std::int64_t bytes = l.parameters[k] * fp32_bytes;
    b.add(name, bytes, role::parameter, no_op, parameter_readers, no_op);
    b.add(name + ".grad", bytes, role::gradient, s.zero_grad, gradient_readers, s.step);
    for (const auto& state : state_names(optimizer)) {
      b.add(name + "." + state, bytes, role::optimizer_state, no_op, {s.step}, no_op);
    }
  }

  const auto add_saved = [&] {
    for (std::int64_t k = 0; k < l.saved_tensors; ++k) {
      const auto name =
          l.saved_tensors == 1 ? l.name + ".saved" : l.name + ".saved" + std::to_string(k);
      b.add(name, l.saved_bytes / l.saved_tensors, role::activation, forward, {backward},
            s.backward_end[i]);
    }
  };
  if (l.saved_before_output) add_saved();
  const bool kept = l.output_freed_after == kept_for_backward;
  const std::size_t next_forward = i + 1 < net.layers.size() ? s.forward[i + 1] : no_op;
  if (kept) {
    b.add(l.name + ".output", l.output_bytes, role::activation, forward, {next_forward, backward},
          s.backward_end[i]);
  } else {
    TANDEM_ASSERT(l.output_freed_after > i && l.output_freed_after < net.layers.size(),
                  l.name + "'s output is freed after a layer that does not follow it");
    b.add(l.name + ".output", l.output_bytes, role::temporary, forward, {next_forward},
          s.forward_end[l.output_freed_after]);
  }
  if (!l.saved_before_output) add_saved();
  b.add(l.name + ".forward_scratch", l.forward_scratch_bytes, role::temporary, forward, {},
        forward);
  b.add(l.name + ".backward_scratch", l.backward_scratch_bytes, role::temporary, backward, {},
        backward);
  // The layer before consumes it; the lowering frees it when that layer's backward ends (after
  // the last backward for the first layer, whose input gradient nothing consumes).
  const std::size_t consumer = i > 0 ? s.backward[i - 1] : no_op;
  b.add(l.name + ".input_gradient", l.input_gradient_bytes, role::gradient, backward, {consumer},
        s.backward_end[i > 0 ? i - 1 : 0]);
}

}  // namespace

footprint::access_sequence access_sequence_of(const network& net, const std::string& model,
                                              optimizer_kind optimizer, const gpu_spec& gpu) {
  fp::access_sequence sequence;
  sequence.model = model;
  sequence.batch_size = net.batch;
  sequence_builder b(sequence, gpu);
  const iteration_op zero = zero_grad(net);
  const iteration_op step = optimizer_step(net, optimizer);
  const schedule s = run_iteration(b, net, zero, step);
  b.finish_times();
  const auto sharers = sharers_of(net);
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    add_layer_tensors(b, net, i, s, sharers[i], optimizer);
    for (const auto bytes : net.layers[i].buffer_bytes) {
      sequence.other_bytes += static_cast<std::size_t>(bytes);
    }
  }
  b.add(zero.name + ".scratch", zero.scratch_bytes, fp::tensor_role::temporary, s.zero_grad, {},
        s.zero_grad);
  b.add(step.name + ".scratch", step.scratch_bytes, fp::tensor_role::temporary, s.step, {}, s.step);
  return sequence;
}

}  // namespace tandem::sim::catalog
