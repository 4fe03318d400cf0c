// SuperNeurons (Wang et al., PPoPP 2018), as far as a plan over one access sequence goes:
// - Liveness analysis: already in the sequence (every tensor is released after its last use).
// - Unified tensor pool: the outputs of convolutions saved for the backward pass are offloaded,
//   prefetched one layer ahead in the backward pass (as vDNN does).
// - Cost-aware recomputation: only the outputs of cheap layers (elementwise, normalization,
//   pooling) are dropped and rebuilt in the backward pass from their inputs, which stay or are
//   rebuilt themselves: segments between convolutions are recomputed.
// Simplifications: the paper prefetches a segment's convolution output and recomputes the cheap
// layers after it from there; a plan cannot bring a tensor back for an operation that does not
// read it, so a cheap layer whose input is offloaded is kept instead. The LRU tensor cache is
// modelled as: with a budget, the latest convolution outputs stay in device memory (are not
// offloaded) for as long as the predicted peak still fits.

#include <algorithm>
#include <vector>

#include "planner_support.hpp"
#include "tandem/footprint/cost_model.hpp"

namespace tandem::footprint::detail {

namespace {

bool cheap(op_kind kind) {
  return kind == op_kind::elementwise || kind == op_kind::normalization || kind == op_kind::pooling;
}

class superneurons_planner final : public planner {
 public:
  [[nodiscard]] std::string_view name() const override { return "superneurons"; }
  [[nodiscard]] std::string_view summary() const override {
    return "SuperNeurons: offload convolution outputs (prefetched one layer ahead), recompute "
           "cheap layers; with a budget the latest convolution outputs stay cached";
  }

  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    auto p = start_plan(sequence, name(), request);
    std::vector<std::size_t> offloaded;  // decisions, in the order the tensors are made
    std::vector<std::pair<std::size_t, std::size_t>> by_creation;  // (creator, tensor)
    for (std::size_t t = 0; t < sequence.tensors.size(); ++t) {
      if (saved_for_backward(sequence, t))
        by_creation.emplace_back(*sequence.tensors[t].created_by, t);
    }
    std::sort(by_creation.begin(), by_creation.end());
    for (const auto& [creator, t] : by_creation) {
      if (sequence.operations[creator].kind != op_kind::convolution) continue;
      if (try_add(p, prefetched_swap(sequence, t, *saved_for_backward(sequence, t)), sequence))
        offloaded.push_back(t);
    }
    for (const auto& [creator, t] : by_creation) {
      if (cheap(sequence.operations[creator].kind))
        try_add(p, recompute(t, *saved_for_backward(sequence, t)), sequence);
    }
    if (request.budget_bytes != 0) keep_latest_cached(sequence, request, offloaded, p);
    return p;
  }

 private:
  /// Takes back the offloads of the latest convolution outputs, newest first, while the
  /// predicted peak stays within the budget.
  static void keep_latest_cached(const access_sequence& s, const planning_request& request,
                                 const std::vector<std::size_t>& offloaded, plan& p) {
    if (predict(s, p, request.costs).peak_bytes > request.budget_bytes) return;
    for (auto t = offloaded.rbegin(); t != offloaded.rend(); ++t) {
      const auto found =
          std::find_if(p.decisions.begin(), p.decisions.end(),
                       [&](const decision& d) { return d.tensor == *t && d.what == action::swap; });
      if (found == p.decisions.end()) continue;
      const auto removed = *found;
      const auto at = p.decisions.erase(found);
      if (predict(s, p, request.costs).peak_bytes > request.budget_bytes) {
        p.decisions.insert(at, removed);
        return;
      }
    }
  }
};

}  // namespace

std::unique_ptr<planner> make_superneurons_planner() {
  return std::make_unique<superneurons_planner>();
}

}  // namespace tandem::footprint::detail
