#pragma once
// HOME's decision space (§3.3), shared by the three searching planners (home, tandem, optimal):
// one action per candidate tensor, 0 retain, 1 swap, 2 recompute, as HOME encodes a particle.
// The candidates are the activations saved for the backward pass (HOME's feature maps); each
// has one stretch, from its last forward access to its first backward one. An action vector
// becomes a plan here and only here, so the three planners search the same space and every
// plan is priced by the one cost model (`predict`).
//
// Note [Action vectors and valid plans]: a recompute is valid only when its rerun can read its
// inputs (plan.hpp's validate): each is alive then, and in memory, back by then or rebuilt
// first. `repair` turns every recompute that is not into retain, in one pass: retaining an
// input never makes another rerun invalid, so the result validates. A particle is repaired
// before it is priced, so what the search keeps is always the plan it priced.
//
// The static facts the integer program (optimal) and tandem's search need about each candidate
// are here too: at which operations each action keeps the tensor out of memory on the vanilla
// timeline, what a rerun costs, which inputs a rerun reads.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "planner_support.hpp"
#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint::detail {

/// HOME's encoding of a tensor's placement.
enum class choice : std::uint8_t { retain = 0, swap = 1, recompute = 2 };

using choices = std::vector<choice>;

/// Operations [first, last] at whose start a tensor is out of device memory; empty when
/// first > last.
struct op_window {
  std::size_t first = 1;
  std::size_t last = 0;
  [[nodiscard]] bool empty() const { return first > last; }
  [[nodiscard]] bool holds(std::size_t op) const { return first <= op && op <= last; }
};

struct candidate {
  std::size_t tensor = 0;
  std::size_t bytes = 0;
  access_pair stretch;
  std::size_t released_op = 0;  ///< the last forward access
  std::size_t needed_op = 0;    ///< the first backward access
  decision swapped;             ///< the swap this candidate's action 1 issues
  bool can_swap = false;        ///< the swap frees memory at some operation
  bool can_recompute = false;   ///< the creating operation can run again, inputs alive then
  double rerun_s = 0;           ///< the creating operation's duration
  /// Where each action keeps the tensor out, on the vanilla timeline: a recompute from the
  /// operation after the release to the one before the rerun; a swap from the first operation
  /// that starts after the copy out could end to the one before the prefetch's.
  op_window swap_out;
  op_window recompute_out;
  /// Copy-channel window of the swap: from the release access's end to the needing access's
  /// start (vanilla seconds), and the channel time both copies take.
  double window_from_s = 0;
  double window_to_s = 0;
  double copy_s = 0;
  /// Candidates that are inputs of this one's creating operation (a rerun reads them).
  std::vector<std::size_t> rerun_inputs;
};

/// Lexicographic: a plan over the budget is worse than any within it, the smaller excess the
/// better; among plans equally over it, the one over it for less of the iteration (byte-seconds
/// above the budget); then the shorter iteration: HOME's "overhead" with its memory constraint.
/// Without a budget (0) the excess is the whole peak: the least peak, then the fastest.
///
/// The byte-seconds matter where no plan fits by the model, most often at an operation that
/// holds more than the budget whatever is moved (its inputs, outputs and scratch): the plan that
/// fits everywhere else is the one most likely to run within the budget, because a real
/// iteration differs from the model (ResNet-20 at batch 300 under a 40 MiB budget: every
/// planner's plan is predicted over it, yet Capuchin's, which moves twice the bytes of the
/// fastest, ran within 31 MiB).
struct score {
  std::size_t excess_bytes = 0;
  double excess_byte_s = 0;
  double iteration_s = 0;
  friend bool operator<(const score& a, const score& b) {
    if (a.excess_bytes != b.excess_bytes) return a.excess_bytes < b.excess_bytes;
    if (a.excess_byte_s != b.excess_byte_s) return a.excess_byte_s < b.excess_byte_s;
    return a.iteration_s < b.iteration_s;
  }
};

class action_space {
 public:
  action_space(const access_sequence& s, const planning_request& request);

  [[nodiscard]] std::size_t size() const { return candidates_.size(); }
  [[nodiscard]] const std::vector<candidate>& candidates() const { return candidates_; }
  [[nodiscard]] const access_sequence& sequence() const { return sequence_; }
  [[nodiscard]] const planning_request& request() const { return request_; }
  /// What the vanilla iteration holds at the start of each operation (after its allocations).
  [[nodiscard]] const std::vector<std::size_t>& vanilla_held() const { return held_; }
  [[nodiscard]] double vanilla_s() const { return vanilla_s_; }

  /// Sets to retain every action the candidate cannot take (a swap that frees nothing, a
  /// recompute that cannot run) and every recompute whose rerun could not read its inputs under
  /// the other actions (Note [Action vectors and valid plans]).
  void repair(choices& c) const;
  /// The plan of a repaired action vector, its decisions in candidate order.
  [[nodiscard]] plan plan_of(const choices& c, std::string_view planner) const;
  /// Repairs `c` and prices its plan with the cost model; counts the evaluation.
  score evaluate(choices& c) const;
  [[nodiscard]] score score_of(const prediction& predicted) const;
  /// The actions of `p` (another planner's) in this space: the candidate's stretch swapped or
  /// recomputed in `p` gives its action; anything else of `p` is dropped.
  [[nodiscard]] choices choices_of(const plan& p) const;
  [[nodiscard]] std::size_t evaluations() const { return evaluations_; }

 private:
  [[nodiscard]] bool rebuildable(const choices& c, std::size_t t, std::size_t op, int depth) const;

  const access_sequence& sequence_;
  planning_request request_;
  std::vector<candidate> candidates_;
  std::vector<std::optional<std::size_t>> candidate_of_;  ///< by tensor
  std::vector<std::vector<std::size_t>> inputs_;
  std::vector<std::size_t> held_;
  double vanilla_s_ = 0;
  mutable std::size_t evaluations_ = 0;
};

}  // namespace tandem::footprint::detail
