#pragma once
// What the planners share: the stretch an activation spends waiting for the backward pass,
// decisions shaped the way the papers issue them, and adding a decision only when the plan stays
// valid. Pricing is never here: planners ask the one cost model (cost_model.hpp).

#include <cstddef>
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
