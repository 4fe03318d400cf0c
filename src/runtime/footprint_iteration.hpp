#pragma once
// One iteration of a job whose footprint tandem manages, as `tandem run`'s training loop and a
// user's own loop (library API) both run it: under its plan (planned_training), under the
// variant the policy chose (planned_variants), or swapping passively (Capuchin's passive mode)
// before the plan, as the plan's fallback once memory proved short, or for its whole life
// (job_options::swap_passively). Which of them runs is decided here, once for both loops.

#include <cstddef>
#include <string>

#include "planned_training.hpp"
#include "planned_variants.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/torch/passive_swapper.hpp"

namespace tandem::runtime::detail {

/// What a job has to manage its footprint with; any may be missing.
struct footprint_parts {
  planned_training* planned = nullptr;
  planned_variants* variants = nullptr;
  torch_support::passive_swapper* passive = nullptr;
};

class footprint_iteration {
 public:
  /// Iteration `stage` of the job (planned_stage::reference for a job with no plan), running
  /// `variant` of its variants; `recorder`, when the iteration is recorded as an access
  /// sequence, is told of passive moves so that it records the iteration as if nothing moved.
  footprint_iteration(footprint_parts parts, planned_stage stage, std::size_t variant,
                      torch_support::relocation_observer* recorder);

  /// Before the step, on the job's thread.
  void begin();
  /// After the step: every tensor moved out is back; returns what moved in the iteration.
  [[nodiscard]] plan_traffic end();
  /// After a step cut short (it runs again): what is out comes back if there is room, and the
  /// executor lets go of the cut iteration. Never throws.
  void cut() noexcept;

  /// How the iteration's record names what ran, given what moved (`traffic`): the plan, the
  /// variant, "passive swapping", or nothing.
  [[nodiscard]] std::string label(const plan_traffic& traffic) const;

  /// Whether the iteration runs with passive swapping: before a plan, except a planned job's
  /// settling and reference iterations while memory has never proved short (they run as a
  /// plain job's); under a plan or a variant, once it has, as the fallback.
  [[nodiscard]] bool swaps_passively() const { return swaps_passively_; }
  /// What passive swapping moved out in the iteration (after end()).
  [[nodiscard]] std::size_t swapped_on_demand_bytes() const { return swapped_on_demand_bytes_; }

 private:
  footprint_parts parts_;
  std::size_t variant_;
  torch_support::relocation_observer* recorder_;
  bool executes_ = false;
  bool times_ = false;  ///< a planned job's settling iteration, timed for the plan's pricing
  bool falls_back_ = false;
  bool swaps_passively_ = false;
  torch_support::passive_stats passive_before_;
  std::size_t swapped_on_demand_bytes_ = 0;
  /// Past the recorded iteration: passive swapping is a last resort, after waiting for others.
  bool recorded_before_ = false;
};

}  // namespace tandem::runtime::detail
