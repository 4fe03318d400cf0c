#pragma once
// What the planners share: the stretch an activation spends waiting for the backward pass,
// decisions shaped the way the papers issue them, and adding a decision only when the plan stays
// valid. Pricing is never here: planners ask the one cost model (cost_model.hpp).

#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/joint_planner.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint::detail {

/// Accesses of one tensor, numbered as plan.hpp numbers them.
struct access_pair {
  std::size_t released_after = 0;
  std::size_t needed_at = 1;
};

/// An activation made in the forward pass and read again in the backward pass (or the optimizer
/// step): it leaves after its last forward access and is needed at its first later read.
std::optional<access_pair> saved_for_backward(const access_sequence& s, std::size_t t);

/// A swap issued as soon as the release access ends and prefetched one operation ahead: the
/// copy in starts when the operation before the one that needs it starts (vDNN's rule).
decision prefetched_swap(const access_sequence& s, std::size_t t, access_pair stretch);

decision recompute(std::size_t t, access_pair stretch);

/// The trigger for a copy wanted at `at_s`, among operations `lowest_op` to `needed_op - 1`. The
/// executor looks at its triggers only as operations start and end (plan_executor.cpp): a time
/// inside an operation would be met at its end, late. So the trigger is the last start or end
/// no later than `at_s` (the first operation's start if none is); where that is before
/// `not_before_s` (a prefetch before its copy out is done is called off), the first at or after
/// it. `start_of(op)`: when operation `op` starts (recorded, or as predicted).
template <class StartOf>
trigger trigger_near(const access_sequence& s, StartOf&& start_of, std::size_t lowest_op,
                     std::size_t needed_op, double at_s, double not_before_s) {
  std::size_t op = needed_op - 1;
  while (op > lowest_op && start_of(op) > at_s) --op;
  const auto end_of = [&](std::size_t o) { return start_of(o) + s.operations[o].duration_s; };
  const trigger at_end{op, s.operations[op].duration_s};
  const bool ends_in_time = end_of(op) <= at_s;
  if ((ends_in_time ? end_of(op) : start_of(op)) >= not_before_s) {
    return ends_in_time ? at_end : trigger{op, 0};
  }
  for (; op < needed_op; ++op) {
    if (start_of(op) >= not_before_s) return {op, 0};
    if (end_of(op) >= not_before_s) return {op, s.operations[op].duration_s};
  }
  return {needed_op - 1, s.operations[needed_op - 1].duration_s};
}

/// trigger_near at the recorded start times.
inline trigger trigger_near(const access_sequence& s, std::size_t lowest_op, std::size_t needed_op,
                            double at_s,
                            double not_before_s = -std::numeric_limits<double>::infinity()) {
  return trigger_near(
      s, [&](std::size_t op) { return s.operations[op].start_s; }, lowest_op, needed_op, at_s,
      not_before_s);
}

/// Appends `d` when the plan stays valid (validate() holds); leaves it unchanged otherwise.
bool try_add(plan& p, const decision& d, const access_sequence& s);

/// The plan's header for `sequence`, without decisions.
plan start_plan(const access_sequence& s, std::string_view planner,
                const planning_request& request);

std::unique_ptr<planner> make_none_planner();
std::unique_ptr<planner> make_vdnn_planner(bool convolution_inputs_only);
std::unique_ptr<planner> make_superneurons_planner();
std::unique_ptr<planner> make_checkpoint_planner();
std::unique_ptr<planner> make_capuchin_planner();
std::unique_ptr<planner> make_tensile_planner(const tensile_options& options);

class option_reader;
std::unique_ptr<planner> make_home_planner(option_reader& options);
std::unique_ptr<planner> make_tandem_search_planner(option_reader& options);
std::unique_ptr<planner> make_optimal_planner(option_reader& options);
/// "KEY: meaning (default)" for each option the planner takes.
std::vector<std::string> home_option_help();
std::vector<std::string> tandem_search_option_help();
std::vector<std::string> optimal_option_help();

}  // namespace tandem::footprint::detail
