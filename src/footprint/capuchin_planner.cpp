// Capuchin (Peng et al., ASPLOS 2020): plans from the measured access sequence. Every stretch an
// activation spends between two consecutive accesses is a candidate. Swaps first, ranked by free
// time (FT = the stretch's measured gap - the time to copy the tensor out and back in): each is
// prefetched so that the copy in ends as the access comes; when the cost model shows a stall
// the prefetch trigger moves to an earlier operation (Capuchin's feedback), and a swap that
// still stalls is given up. Then, while the budget is not met, recomputes ranked by MSPS
// (memory saving per second of rerun, the rerun including the inputs that must be rebuilt with
// it). Every choice is priced again with the cost model, and planning stops as soon as the
// predicted peak fits. Without a budget: every swap that adds no stall (the smallest peak
// reachable without slowing the iteration down), no recompute.

#include <algorithm>
#include <vector>

#include "planner_support.hpp"
#include "stretches.hpp"
#include "tandem/footprint/cost_model.hpp"

namespace tandem::footprint::detail {

namespace {

struct candidate {
  std::size_t tensor = 0;
  access_pair stretch;
  double rank = 0;  ///< FT for swaps, MSPS for recomputes: the higher, the sooner
};

double end_of(const operation& op) {
  return op.start_s + op.duration_s;
}

class capuchin_planner final : public planner {
 public:
  [[nodiscard]] std::string_view name() const override { return "capuchin"; }
  [[nodiscard]] std::string_view summary() const override {
    return "Capuchin: swap the activations with the most free time, prefetch with feedback, then "
           "recompute by memory saved per second, only as much as the budget needs";
  }

  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    auto p = start_plan(sequence, name(), request);
    auto current = predict(sequence, p, request.costs);
    const auto fits = [&] {
      return request.budget_bytes != 0 && current.peak_bytes <= request.budget_bytes;
    };
    if (fits()) return p;
    for (const auto& c : swap_candidates(sequence, request.costs)) {
      if (add_swap(sequence, request, c, p, current) && fits()) return p;
    }
    if (request.budget_bytes == 0) return p;
    for (const auto& c : recompute_candidates(sequence, p)) {
      if (!try_add(p, recompute(c.tensor, c.stretch), sequence)) continue;
      current = predict(sequence, p, request.costs);
      if (fits()) return p;
    }
    return p;
  }

 private:
  static std::vector<candidate> swap_candidates(const access_sequence& s,
                                                const cost_options& costs) {
    std::vector<candidate> out;
    for (std::size_t t = 0; t < s.tensors.size(); ++t) {
      const auto& x = s.tensors[t];
      if (x.role != tensor_role::activation) continue;
      const double copy_s = 2 * static_cast<double>(x.bytes) / costs.copy_bandwidth;
      for (std::size_t access = 0; access < x.read_by.size(); ++access) {
        const auto gap = s.operations[*s.access_op(t, access + 1)].start_s -
                         end_of(s.operations[*s.access_op(t, access)]);
        if (gap - copy_s > 0) out.push_back({t, {access, access + 1}, gap - copy_s});
      }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const candidate& a, const candidate& b) { return a.rank > b.rank; });
    return out;
  }

  /// Adds the swap if, after moving its prefetch earlier as needed, it adds no stall.
  static bool add_swap(const access_sequence& s, const planning_request& request,
                       const candidate& c, plan& p, prediction& current) {
    const auto released_op = *s.access_op(c.tensor, c.stretch.released_after);
    const auto needed_op = *s.access_op(c.tensor, c.stretch.needed_at);
    const double copy_in_s =
        static_cast<double>(s.tensors[c.tensor].bytes) / request.costs.copy_bandwidth;
    decision d{c.tensor,
               action::swap,
               c.stretch.released_after,
               c.stretch.needed_at,
               {released_op, 0},
               trigger_near(s, released_op, needed_op, s.operations[needed_op].start_s - copy_in_s),
               false};
    if (!try_add(p, d, s)) return false;
    const double tolerance = 1e-9 * std::max(current.iteration_s, 1e-9);
    // Feedback: a few moves by the stall seen, then the earliest useful trigger, then give up.
    // The earliest is when its copy out completes: a prefetch before that calls the swap off
    // (cost_model.cpp), which saves nothing, so a swap called off (this one, or another whose
    // copy out this one's delays) is never kept.
    for (int attempt = 0; attempt < 6; ++attempt) {
      const auto tried = predict(s, p, request.costs);
      if (tried.called_off_bytes > current.called_off_bytes) break;
      const double extra_stall = tried.stall_s - current.stall_s;
      if (extra_stall <= tolerance && tried.iteration_s <= current.iteration_s + tolerance) {
        current = tried;
        return true;
      }
      auto& in = p.decisions.back().swap_in;
      const double out_done_s = tried.copies.back().out_done_s;
      const double in_s = s.operations[in.op].start_s + in.delay_s;
      if (in_s <= out_done_s + tolerance) break;
      const double earlier = attempt < 4 ? in_s - std::max(extra_stall, copy_in_s) : out_done_s;
      in = trigger_near(s, released_op, needed_op, std::max(earlier, out_done_s), out_done_s);
    }
    p.decisions.pop_back();
    return false;
  }

  /// Seconds of rerun that rebuilding tensor `t` before `op` costs under plan `p`: its creating
  /// operation, and the inputs recomputed themselves and out by then.
  static double rerun_s(const access_sequence& s, const stretch_lookup& lookup, const plan& p,
                        std::size_t t, std::size_t op, int depth = 0) {
    const auto creator = *s.tensors[t].created_by;
    double total = s.operations[creator].duration_s;
    if (depth > 64) return total;  // deep chains: the estimate only ranks candidates
    for (std::size_t input = 0; input < s.tensors.size(); ++input) {
      const auto& readers = s.tensors[input].read_by;
      if (std::find(readers.begin(), readers.end(), creator) == readers.end()) continue;
      const auto out = lookup.out_before(input, op);
      if (out && p.decisions[*out].what == action::recompute)
        total += rerun_s(s, lookup, p, input, op, depth + 1);
    }
    return total;
  }

  static std::vector<candidate> recompute_candidates(const access_sequence& s, const plan& p) {
    const stretch_lookup lookup(s, p);
    std::vector<candidate> out;
    for (std::size_t t = 0; t < s.tensors.size(); ++t) {
      const auto& x = s.tensors[t];
      if (x.role != tensor_role::activation || !x.created_by) continue;
      for (std::size_t access = 0; access < x.read_by.size(); ++access) {
        const auto needed_op = x.read_by[access];
        if (lookup.out_before(t, needed_op)) continue;  // already swapped there
        const double cost = std::max(rerun_s(s, lookup, p, t, needed_op), 1e-12);
        out.push_back({t, {access, access + 1}, static_cast<double>(x.bytes) / cost});
      }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const candidate& a, const candidate& b) { return a.rank > b.rank; });
    return out;
  }
};

}  // namespace

std::unique_ptr<planner> make_capuchin_planner() {
  return std::make_unique<capuchin_planner>();
}

}  // namespace tandem::footprint::detail
