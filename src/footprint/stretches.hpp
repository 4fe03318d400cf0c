#pragma once
// A plan's decisions placed on the sequence's operation order, for validate(plan) and the cost
// model: where each stretch begins and ends, and which stretch (if any) has a tensor out when an
// operation is about to run. Assumes the decisions' indices exist (validate checks them first).

#include <cstddef>
#include <optional>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/plan.hpp"

namespace tandem::footprint::detail {

/// The tensor leaves after `from_op` ends (-1: at the iteration's start, for a persistent tensor
/// released at its access 0) and must be back before `to_op` starts. A span that wraps (Note
/// [Stretches across iterations], plan.hpp) has it out before `to_op` and after `from_op` of
/// every iteration: to_op <= from_op.
struct stretch_span {
  std::ptrdiff_t from_op = -1;
  std::size_t to_op = 0;
  bool wraps = false;

  /// Whether the tensor is out when operation `op` is about to start.
  [[nodiscard]] bool out_before(std::size_t op) const {
    const auto at = static_cast<std::ptrdiff_t>(op);
    if (wraps) return op <= to_op || from_op < at;
    return from_op < at && op <= to_op;
  }
};

inline stretch_span span_of(const access_sequence& s, const decision& d) {
  const auto from = s.access_op(d.tensor, d.released_after);
  return {from ? static_cast<std::ptrdiff_t>(*from) : -1, *s.access_op(d.tensor, d.needed_at),
          d.wraps};
}

/// access_sequence::inputs_of for every operation at once (in tensor order), in one pass.
inline std::vector<std::vector<std::size_t>> inputs_by_op(const access_sequence& s) {
  std::vector<std::vector<std::size_t>> inputs(s.operations.size());
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    for (const auto reader : s.tensors[t].read_by) inputs[reader].push_back(t);
  }
  return inputs;
}

class stretch_lookup {
 public:
  stretch_lookup(const access_sequence& s, const plan& p)
      : sequence_(s), plan_(p), by_tensor_(s.tensors.size()) {
    for (std::size_t k = 0; k < p.decisions.size(); ++k)
      by_tensor_[p.decisions[k].tensor].push_back(k);
  }

  /// The decision whose stretch has tensor `t` out when operation `op` is about to start
  /// (stretch_span::out_before).
  [[nodiscard]] std::optional<std::size_t> out_before(std::size_t t, std::size_t op) const {
    for (const auto k : by_tensor_[t]) {
      if (span_of(sequence_, plan_.decisions[k]).out_before(op)) return k;
    }
    return std::nullopt;
  }

  [[nodiscard]] const std::vector<std::size_t>& decisions_of(std::size_t t) const {
    return by_tensor_[t];
  }

 private:
  const access_sequence& sequence_;
  const plan& plan_;
  std::vector<std::vector<std::size_t>> by_tensor_;
};

}  // namespace tandem::footprint::detail
