// vDNN (Rhu et al., MICRO 2016): offload the feature maps the backward pass needs while the
// forward pass goes on, and prefetch each one layer ahead in the backward pass. vdnn-all
// offloads every saved activation, vdnn-conv only the inputs of convolutions (the paper's two
// static policies). A prefetch that comes late stalls the layer that needs it (vDNN's
// synchronous fallback on a miss). The budget is ignored: vDNN offloads all it offloads.

#include "planner_support.hpp"

namespace tandem::footprint::detail {

namespace {

bool read_by_forward_convolution(const access_sequence& s, std::size_t t) {
  for (const auto reader : s.tensors[t].read_by) {
    const auto& op = s.operations[reader];
    if (op.where == phase::forward && op.kind == op_kind::convolution) return true;
  }
  return false;
}

class vdnn_planner final : public planner {
 public:
  explicit vdnn_planner(bool convolution_inputs_only)
      : convolution_inputs_only_(convolution_inputs_only) {}

  [[nodiscard]] std::string_view name() const override {
    return convolution_inputs_only_ ? "vdnn-conv" : "vdnn-all";
  }
  [[nodiscard]] std::string_view summary() const override {
    return convolution_inputs_only_
               ? "vDNN: swap out the inputs of convolutions after the forward pass reads them, "
                 "prefetch one layer ahead"
               : "vDNN: swap out every activation saved for the backward pass, prefetch one "
                 "layer ahead";
  }

  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    auto p = start_plan(sequence, name(), request);
    for (std::size_t t = 0; t < sequence.tensors.size(); ++t) {
      const auto stretch = saved_for_backward(sequence, t);
      if (!stretch) continue;
      if (convolution_inputs_only_ && !read_by_forward_convolution(sequence, t)) continue;
      try_add(p, prefetched_swap(sequence, t, *stretch), sequence);
    }
    return p;
  }

 private:
  bool convolution_inputs_only_;
};

}  // namespace

std::unique_ptr<planner> make_vdnn_planner(bool convolution_inputs_only) {
  return std::make_unique<vdnn_planner>(convolution_inputs_only);
}

}  // namespace tandem::footprint::detail
