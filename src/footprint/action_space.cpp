#include "action_space.hpp"

#include <algorithm>

#include "planner_support.hpp"
#include "stretches.hpp"
#include "tandem/common/error.hpp"

namespace tandem::footprint::detail {

namespace {

double end_of(const operation& op) {
  return op.start_s + op.duration_s;
}

}  // namespace

action_space::action_space(const access_sequence& s, const planning_request& request)
    : sequence_(s),
      request_(request),
      candidate_of_(s.tensors.size()),
      inputs_(inputs_by_op(s)),
      vanilla_s_(s.iteration_s()) {
  const auto& ops = s.operations;
  const double bandwidth = request.costs.copy_bandwidth;
  TANDEM_EXPECTS(bandwidth > 0, usage_error, "cost_options::copy_bandwidth must be > 0");

  // What the vanilla iteration holds at each operation's start: a tensor from its creating
  // operation to its release operation, an operation's scratch while it runs, persistent ones
  // and other_bytes throughout.
  std::vector<std::int64_t> delta(ops.size() + 1, 0);
  std::size_t floor = s.other_bytes;
  const auto scratch = s.scratch_bytes_by_op();
  for (std::size_t k = 0; k < ops.size(); ++k) {
    delta[k] += static_cast<std::int64_t>(scratch[k]);
    delta[k + 1] -= static_cast<std::int64_t>(scratch[k]);
  }
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    const auto& x = s.tensors[t];
    if (!x.created_by) {
      floor += x.bytes;
      continue;
    }
    if (s.is_scratch(t)) continue;  // in scratch
    const auto until = s.release_op(t).value_or(ops.size() - 1);
    delta[*x.created_by] += static_cast<std::int64_t>(x.bytes);
    delta[until + 1] -= static_cast<std::int64_t>(x.bytes);
  }
  held_.resize(ops.size());
  std::int64_t running = static_cast<std::int64_t>(floor);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    running += delta[k];
    held_[k] = static_cast<std::size_t>(running);
  }

  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    const auto stretch = saved_for_backward(s, t);
    if (!stretch) continue;
    const auto& x = s.tensors[t];
    candidate c;
    c.tensor = t;
    c.bytes = x.bytes;
    c.stretch = *stretch;
    c.released_op = *s.access_op(t, stretch->released_after);
    c.needed_op = *s.access_op(t, stretch->needed_at);
    c.copy_s = static_cast<double>(x.bytes) / bandwidth;
    c.window_from_s = end_of(ops[c.released_op]);
    c.window_to_s = ops[c.needed_op].start_s;
    c.swapped = {t,
                 action::swap,
                 stretch->released_after,
                 stretch->needed_at,
                 {c.released_op, 0},
                 trigger_near(s, c.released_op, c.needed_op, c.window_to_s - c.copy_s)};
    // Out once the copy out could have ended, back when the prefetch is issued.
    std::size_t first = c.released_op + 1;
    while (first < c.needed_op && ops[first].start_s < c.window_from_s + c.copy_s) ++first;
    c.swap_out = {first, c.swapped.swap_in.op == 0 ? 0 : c.swapped.swap_in.op - 1};
    if (c.swap_out.last >= c.needed_op) c.swap_out.last = c.needed_op - 1;
    c.can_swap = !c.swap_out.empty();
    c.recompute_out = {c.released_op + 1, c.needed_op - 1};
    const auto creator = *x.created_by;
    c.rerun_s = ops[creator].duration_s;
    c.can_recompute = ops[creator].recomputable && !c.recompute_out.empty();
    for (const auto input : inputs_[creator]) {
      const auto released = s.release_op(input);
      if (released && *released < c.needed_op) c.can_recompute = false;
    }
    candidate_of_[t] = candidates_.size();
    candidates_.push_back(std::move(c));
  }
  for (auto& c : candidates_) {
    for (const auto input : inputs_[*s.tensors[c.tensor].created_by]) {
      if (const auto j = candidate_of_[input]) c.rerun_inputs.push_back(*j);
    }
  }
}

bool action_space::rebuildable(const choices& c, std::size_t t, std::size_t op, int depth) const {
  // A chain longer than the sequence cannot be: every step goes to an earlier creator.
  if (depth > static_cast<int>(sequence_.operations.size())) return false;
  for (const auto input : inputs_[*sequence_.tensors[t].created_by]) {
    const auto released = sequence_.release_op(input);
    if (released && *released < op) return false;
    const auto j = candidate_of_[input];
    if (!j || c[*j] == choice::retain) continue;
    const auto& other = candidates_[*j];
    if (!(other.released_op < op && op <= other.needed_op)) continue;  // in memory then
    if (c[*j] == choice::swap && other.needed_op != op) return false;
    if (c[*j] == choice::recompute && !rebuildable(c, input, op, depth + 1)) return false;
  }
  return true;
}

void action_space::repair(choices& c) const {
  TANDEM_ASSERT(c.size() == candidates_.size(), "an action vector of another length");
  for (std::size_t i = 0; i < c.size(); ++i) {
    if ((c[i] == choice::swap && !candidates_[i].can_swap) ||
        (c[i] == choice::recompute && !candidates_[i].can_recompute))
      c[i] = choice::retain;
  }
  // Judged against the actions as they were: retaining an input never invalidates a rerun.
  std::vector<std::size_t> invalid;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i] == choice::recompute &&
        !rebuildable(c, candidates_[i].tensor, candidates_[i].needed_op, 0))
      invalid.push_back(i);
  }
  for (const auto i : invalid) c[i] = choice::retain;
}

plan action_space::plan_of(const choices& c, std::string_view planner) const {
  auto p = start_plan(sequence_, planner, request_);
  for (std::size_t i = 0; i < c.size(); ++i) {
    const auto& x = candidates_[i];
    if (c[i] == choice::swap) p.decisions.push_back(x.swapped);
    if (c[i] == choice::recompute) p.decisions.push_back(recompute(x.tensor, x.stretch));
  }
  return p;
}

score action_space::score_of(const prediction& predicted) const {
  // No budget: the least peak, then the fastest plan there.
  const auto budget = request_.budget_bytes;
  if (budget == 0) return {predicted.peak_bytes, 0, predicted.iteration_s};
  if (predicted.peak_bytes <= budget) return {0, 0, predicted.iteration_s};
  double above = 0;
  const auto& curve = predicted.curve;
  for (std::size_t i = 0; i + 1 < curve.size(); ++i) {
    if (curve[i].bytes > budget)
      above += static_cast<double>(curve[i].bytes - budget) * (curve[i + 1].at_s - curve[i].at_s);
  }
  return {predicted.peak_bytes - budget, above, predicted.iteration_s};
}

score action_space::evaluate(choices& c) const {
  repair(c);
  ++evaluations_;
  return score_of(predict(sequence_, plan_of(c, ""), request_.costs));
}

choices action_space::choices_of(const plan& p) const {
  choices c(candidates_.size(), choice::retain);
  for (const auto& d : p.decisions) {
    const auto i = d.tensor < candidate_of_.size() ? candidate_of_[d.tensor] : std::nullopt;
    if (!i || d.released_after != candidates_[*i].stretch.released_after) continue;
    c[*i] = d.what == action::swap ? choice::swap : choice::recompute;
  }
  return c;
}

}  // namespace tandem::footprint::detail
