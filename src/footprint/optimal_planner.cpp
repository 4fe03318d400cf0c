// The exact planner: HOME's decision space (action_space.hpp) as an integer program, solved by
// COIN-OR CBC within a time limit. It is the yardstick of the searching planners (home,
// tandem): the figures say how far each is from a proven optimum of the same space.
//
// Note [The integer program of a plan]: a model of the cost model, not a second one. Per
// candidate tensor i, binaries s_i (swap) and c_i (recompute), s_i + c_i <= 1: O(tensors)
// binaries (Checkmate's O(T^2) form does not solve 100 tensors in minutes with CBC). Rows:
// - memory, one per operation whose vanilla holding exceeds the budget B: what it holds at its
//   start (action_space::vanilla_held) less the bytes each action keeps out then (its
//   op_window) is at most B. A recompute whose rerun reads a recomputed input rebuilds that
//   input earlier, which then stays: continuous w_ij >= c_i + c_j - 1 adds the input's bytes
//   back from then on (counted once per such reader: conservative where several readers do).
// - reruns: a recompute may not read an input swapped out then, along chains of recomputed
//   inputs up to 4 deep (deeper ones are left to action_space::repair, whose plan is priced).
// - copy channel: the copies of the swaps in the order the replay issues them (copy out at the
//   release, copy in at the prefetch trigger, on the vanilla timeline), one at a time, each
//   ending no earlier than the one before it plus its own copy time; a copy in that ends after
//   its reader's start stalls the iteration by that much, and the stall never shrinks (a
//   continuous chain; big-M rows leave a candidate that is not swapped out of it). The issue
//   times are not shifted by earlier stalls, so the chain can overstate later ones slightly
//   where the channel was idle, and understates nothing the replay's FIFO channel adds.
// Objective: the vanilla iteration + the reruns' durations + sigma. The solution's actions are
// repaired and priced with `predict`; if the predicted peak exceeds the budget (copies queue
// longer than the windows say), the program is solved again for less by the excess, twice at
// most. The plan carries the program's objective and bound and the predicted time
// (plan::search). Without a budget (0) or with one the program cannot meet, it first finds the
// least peak it can reach (a continuous P replacing B, minimized), then the fastest plan there.
// A solve that finds nothing in its time (or whose CBC died: integer_program.hpp) counts as
// one the program cannot meet; when no solve finds anything, the plan retains every tensor and
// has no objective or bound.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "action_space.hpp"
#include "integer_program.hpp"
#include "planner_options.hpp"
#include "planner_support.hpp"
#include "tandem/common/error.hpp"

namespace tandem::footprint::detail {

namespace {

constexpr int max_chain_depth = 4;
constexpr int max_tightenings = 4;

struct optimal_options {
  double time_limit_s = 60;
  double relative_gap = 1e-4;
};

struct ip_result {
  bool feasible = false;
  bool proven_optimal = false;
  double objective_s = 0;
  double bound_s = 0;
  choices actions;
  std::size_t least_peak_bytes = 0;  ///< when minimizing the peak
};

/// Builds and solves the program of `space` for `budget` bytes (0: minimize the peak); nothing
/// found once `stop` is requested.
ip_result solve_program(const action_space& space, std::size_t budget, double seconds, double gap,
                        const std::stop_token& stop) {
  if (stop.stop_requested()) return {};  // building a program takes time too
  const auto& cs = space.candidates();
  const auto& held = space.vanilla_held();
  const double time_scale = std::max(space.vanilla_s(), 1e-12);
  std::size_t vanilla_peak = 0;
  for (const auto h : held) vanilla_peak = std::max(vanilla_peak, h);
  const bool minimize_peak = budget == 0;
  const double memory_scale = static_cast<double>(minimize_peak ? vanilla_peak : budget);

  integer_program ip;
  std::vector<int> swap(cs.size(), -1);
  std::vector<int> rerun(cs.size(), -1);
  // Objective in vanilla iterations; the peak (when minimized) dominates by far.
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (cs[i].can_swap) swap[i] = ip.binary(0);
    if (cs[i].can_recompute) rerun[i] = ip.binary(cs[i].rerun_s / time_scale);
  }
  const int stall = ip.continuous(0, 1e30, 1);
  const int peak = minimize_peak ? ip.continuous(0, 1e30, 1e6) : -1;

  for (std::size_t i = 0; i < cs.size(); ++i) {
    row r;
    r.add(swap[i], 1);
    r.add(rerun[i], 1);
    if (r.columns.size() == 2) ip.at_most(r, 1);
  }

  // Reruns: chains of recomputed inputs, none swapped out at the rerun.
  struct chain_link {
    std::size_t input;
    std::size_t reader;
  };
  std::vector<chain_link> rebuilt_early;  // input recomputed and rebuilt for the reader
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (rerun[i] < 0) continue;
    const auto op = cs[i].needed_op;
    // Depth-first over inputs out at `op`: the path's reruns and the input's swap.
    std::vector<std::pair<std::size_t, std::vector<int>>> stack{{i, {rerun[i]}}};
    while (!stack.empty()) {
      auto [at, path] = stack.back();
      stack.pop_back();
      for (const auto j : cs[at].rerun_inputs) {
        const auto& input = cs[j];
        if (!(input.released_op < op && op <= input.needed_op)) continue;
        if (swap[j] >= 0 && input.needed_op != op) {
          row r;
          for (const auto column : path) r.add(column, 1);
          r.add(swap[j], 1);
          ip.at_most(r, static_cast<double>(path.size()));
        }
        if (rerun[j] >= 0 && static_cast<int>(path.size()) < max_chain_depth) {
          auto longer = path;
          longer.push_back(rerun[j]);
          stack.emplace_back(j, std::move(longer));
        }
      }
    }
    for (const auto j : cs[i].rerun_inputs) {
      const auto& input = cs[j];
      if (rerun[j] >= 0 && input.released_op < op && op < input.needed_op)
        rebuilt_early.push_back({j, i});
    }
  }
  std::vector<int> early(rebuilt_early.size());
  for (std::size_t e = 0; e < rebuilt_early.size(); ++e) {
    early[e] = ip.continuous(0, 1, 0);
    row r;  // c_reader + c_input - w <= 1
    r.add(rerun[rebuilt_early[e].reader], 1);
    r.add(rerun[rebuilt_early[e].input], 1);
    r.add(early[e], -1);
    ip.at_most(r, 1);
  }

  // Memory.
  for (std::size_t k = 0; k < held.size(); ++k) {
    if (!minimize_peak && held[k] <= budget) continue;
    row r;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const double bytes = static_cast<double>(cs[i].bytes) / memory_scale;
      if (swap[i] >= 0 && cs[i].swap_out.holds(k)) r.add(swap[i], -bytes);
      if (rerun[i] >= 0 && cs[i].recompute_out.holds(k)) r.add(rerun[i], -bytes);
    }
    for (std::size_t e = 0; e < rebuilt_early.size(); ++e) {
      const auto& input = cs[rebuilt_early[e].input];
      if (k >= cs[rebuilt_early[e].reader].needed_op && input.recompute_out.holds(k))
        r.add(early[e], static_cast<double>(input.bytes) / memory_scale);
    }
    const double vanilla = static_cast<double>(held[k]) / memory_scale;
    if (minimize_peak) {
      r.add(peak, -1);
      ip.at_most(r, -vanilla);
    } else {
      ip.at_most(r, 1 - vanilla);
    }
  }

  // Copy channel: the copies in the order the replay issues them (each copy out at its
  // release, each copy in at its prefetch trigger, vanilla times), one at a time. F_e, when
  // copy e could end: after the one before it and after its own issue plus its copy time.
  // D, the stall so far: at least how late each copy in ends after its operation's start (big-M
  // lifts the row for a candidate not swapped), never decreasing.
  struct copy_event {
    double issue_s = 0;
    std::size_t candidate = 0;
    bool inbound = false;
  };
  std::vector<copy_event> events;
  double total_copy_s = 0;
  const auto& ops = space.sequence().operations;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (swap[i] < 0) continue;
    const auto& in = cs[i].swapped.swap_in;
    events.push_back({cs[i].window_from_s, i, false});
    events.push_back({ops[in.op].start_s + in.delay_s, i, true});
    total_copy_s += 2 * cs[i].copy_s;
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const copy_event& a, const copy_event& b) { return a.issue_s < b.issue_s; });
  int previous_end = -1;
  int previous_stall = -1;
  for (const auto& e : events) {
    const auto& x = cs[e.candidate];
    const double copy = x.copy_s / time_scale;
    const int end = ip.continuous(0, 1e30, 0);
    if (previous_end >= 0) {
      row chained;  // F_prev + copy s - F <= 0
      chained.add(previous_end, 1);
      chained.add(swap[e.candidate], copy);
      chained.add(end, -1);
      ip.at_most(chained, 0);
    }
    row issued;  // (issue + copy) s - F <= 0
    issued.add(swap[e.candidate], e.issue_s / time_scale + copy);
    issued.add(end, -1);
    ip.at_most(issued, 0);
    previous_end = end;
    if (!e.inbound) continue;
    const double due = x.window_to_s / time_scale;
    const double big_m = std::max(0.0, (space.vanilla_s() + total_copy_s) / time_scale - due);
    const int late = ip.continuous(0, 1e30, 0);
    row behind;  // F - due - M (1 - s) - D <= 0
    behind.add(end, 1);
    behind.add(swap[e.candidate], big_m);
    behind.add(late, -1);
    ip.at_most(behind, due + big_m);
    if (previous_stall >= 0) {
      row growing;  // D_prev - D <= 0
      growing.add(previous_stall, 1);
      growing.add(late, -1);
      ip.at_most(growing, 0);
    }
    previous_stall = late;
  }
  if (previous_stall >= 0) {
    row total;  // D_last - sigma <= 0
    total.add(previous_stall, 1);
    total.add(stall, -1);
    ip.at_most(total, 0);
  }

  ip_result out;
  if (!ip.solve(seconds, gap, stop)) return out;
  out.feasible = true;
  out.proven_optimal = ip.proven_optimal();
  const double peak_term = minimize_peak ? 1e6 * ip.value(peak) : 0;
  out.objective_s = (1 + ip.objective() - peak_term) * time_scale;
  out.bound_s = (1 + std::max(0.0, ip.bound() - peak_term)) * time_scale;
  if (minimize_peak)
    out.least_peak_bytes = static_cast<std::size_t>(std::ceil(ip.value(peak) * memory_scale));
  out.actions.assign(cs.size(), choice::retain);
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (swap[i] >= 0 && ip.value(swap[i]) > 0.5) out.actions[i] = choice::swap;
    if (rerun[i] >= 0 && ip.value(rerun[i]) > 0.5) out.actions[i] = choice::recompute;
  }
  return out;
}

class optimal_planner final : public planner {
 public:
  explicit optimal_planner(optimal_options options) : options_(options) {}

  [[nodiscard]] std::string_view name() const override { return "optimal"; }
  [[nodiscard]] std::string_view summary() const override {
    return "exact: retain/swap/recompute per activation as an integer program solved by CBC, "
           "the yardstick of the searches (options: time_limit, gap)";
  }

  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    const auto started = std::chrono::steady_clock::now();
    const auto left = [&] {
      const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - started;
      return options_.time_limit_s - spent.count();
    };
    const action_space space(sequence, request);
    auto budget = request.budget_bytes;
    std::optional<ip_result> best;
    std::optional<prediction> best_predicted;
    ip_result solved;
    if (budget != 0)
      solved = solve_program(space, budget, left(), options_.relative_gap, request.stop);
    if (!solved.feasible) {
      // No budget, or one the program cannot meet: the least peak it reaches, then the fastest
      // plan there.
      const auto least = solve_program(space, 0, left() / 2, options_.relative_gap, request.stop);
      if (least.feasible) budget = least.least_peak_bytes;
      solved = least.feasible
                   ? solve_program(space, budget, left(), options_.relative_gap, request.stop)
                   : least;
    }
    for (int attempt = 0; solved.feasible; ++attempt) {
      auto actions = solved.actions;
      space.repair(actions);
      const auto predicted = predict(sequence, space.plan_of(actions, name()), request.costs);
      const bool fits = request.budget_bytes == 0 || predicted.peak_bytes <= request.budget_bytes;
      if (!best || (fits && best_predicted->peak_bytes > request.budget_bytes) ||
          space.score_of(predicted) < space.score_of(*best_predicted)) {
        solved.actions = actions;
        best = solved;
        best_predicted = predicted;
      }
      if (fits || attempt == max_tightenings || left() <= 0 || request.stop.stop_requested() ||
          predicted.peak_bytes - request.budget_bytes >= budget)
        break;
      budget -= predicted.peak_bytes - request.budget_bytes;
      solved = solve_program(space, budget, left(), options_.relative_gap, request.stop);
    }

    auto result =
        space.plan_of(best ? best->actions : choices(space.size(), choice::retain), name());
    const auto predicted =
        best_predicted ? *best_predicted : predict(sequence, result, request.costs);
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - started;
    result.search = search_summary{
        .seconds = spent.count(),
        .evaluations = 0,
        .predicted_s = predicted.iteration_s,
        .predicted_peak_bytes = predicted.peak_bytes,
        .objective_s = best ? std::optional<double>(best->objective_s) : std::nullopt,
        .bound_s = best ? std::optional<double>(best->bound_s) : std::nullopt,
        .proven_optimal = best && best->proven_optimal};
    return result;
  }

 private:
  optimal_options options_;
};

}  // namespace

std::vector<std::string> optimal_option_help() {
  return {"time_limit: seconds CBC may take, over all its solves (60)",
          "gap: relative gap at which CBC stops, proven (0.0001)"};
}

std::unique_ptr<planner> make_optimal_planner(option_reader& options) {
  optimal_options o;
  o.time_limit_s = options.real("time_limit", o.time_limit_s, 0.01, 1e6);
  o.relative_gap = options.real("gap", o.relative_gap, 0, 1);
  return std::make_unique<optimal_planner>(o);
}

}  // namespace tandem::footprint::detail
