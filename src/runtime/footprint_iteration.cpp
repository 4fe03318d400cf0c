#include "footprint_iteration.hpp"

namespace tandem::runtime::detail {

footprint_iteration::footprint_iteration(footprint_parts parts, planned_stage stage,
                                         std::size_t variant,
                                         torch_support::relocation_observer* recorder)
    : parts_(parts), variant_(variant), recorder_(recorder) {
  const bool under_plan = stage == planned_stage::planned;
  executes_ = parts_.planned != nullptr && under_plan && parts_.planned->planned();
  // Before the plan, always; under it, as the fallback once memory proved short (the plan may
  // not fit the budget with the pool's regions).
  falls_back_ = parts_.passive != nullptr && under_plan &&
                (executes_ || parts_.variants != nullptr) &&
                parts_.passive->stats().swapped_out_bytes > 0;
  // A planned job's settling and reference iterations are its plain iteration, measured: where
  // memory never proved short before them they run as a plain job's do, without the swapper's
  // callbacks, which made the reference about 3% slower (ResNet-20 at batch 8, planner none:
  // predicted 2.7-3.7% above the planned iterations with them, -1.9% to 1.5% without, 4 runs).
  const bool measures_plain =
      parts_.planned != nullptr && parts_.variants == nullptr &&
      (stage == planned_stage::settling || stage == planned_stage::reference);
  const bool proved_short =
      parts_.passive != nullptr && parts_.passive->stats().swapped_out_bytes > 0;
  swaps_passively_ = parts_.passive != nullptr && (!under_plan || falls_back_) &&
                     (!measures_plain || proved_short);
  // The settling iteration, run plain, times the operations the plan is priced at.
  times_ = stage == planned_stage::settling && measures_plain && !swaps_passively_ &&
           parts_.planned->planned();
  if (parts_.passive != nullptr) passive_before_ = parts_.passive->stats();
  recorded_before_ = stage != planned_stage::warm_up && stage != planned_stage::recorded;
}

void footprint_iteration::begin() {
  if (times_) parts_.planned->begin_timing();
  if (executes_) parts_.planned->begin_iteration();
  if (parts_.variants != nullptr) parts_.variants->begin_iteration(variant_);
  if (falls_back_) {
    // The executor's tensors are its own to move, and the swapper's moves are not its
    // iteration's allocations.
    auto* executor = executes_ ? &parts_.planned->executor() : parts_.variants->running();
    parts_.passive->begin(executor, executor, /*as_fallback=*/true);
  } else if (swaps_passively_) {
    // Capuchin's passive mode swaps as soon as memory runs short while the access pattern is
    // unknown; once the iteration is recorded, the job's memory need is known to its policy,
    // and where another job's memory will come back, waiting for it is cheaper than copies.
    parts_.passive->begin(recorder_, nullptr, /*as_fallback=*/recorded_before_);
  }
}

plan_traffic footprint_iteration::end() {
  plan_traffic traffic;
  if (parts_.variants != nullptr) traffic = parts_.variants->end_iteration();
  if (executes_) traffic = parts_.planned->end_iteration();  // its tensors back first
  if (times_) parts_.planned->end_timing();
  if (swaps_passively_) {
    parts_.passive->end();
    const auto moved = passive_traffic(passive_before_, parts_.passive->stats());
    traffic.swapped_out_bytes += moved.swapped_out_bytes;
    traffic.swapped_in_bytes += moved.swapped_in_bytes;
    swapped_on_demand_bytes_ = moved.swapped_out_bytes;
    if (falls_back_ && executes_) parts_.planned->fell_back(moved.swapped_out_bytes);
  }
  return traffic;
}

void footprint_iteration::cut() noexcept {
  if (swaps_passively_ && parts_.passive->active()) {
    try {
      parts_.passive->end();  // what is out comes back for the next try
    } catch (...) {
      // No room now: it stays on the host, its data intact, and comes back when the next
      // passive iteration reads it.
    }
  }
  try {
    if (parts_.variants != nullptr) parts_.variants->end_iteration();
    if (executes_) parts_.planned->end_iteration();
    if (times_) parts_.planned->end_timing();
  } catch (...) {
    // What the executor kept from the cut iteration (a borrow refused while the exception
    // unwound through an operation's end) is moot: the iteration runs again.
  }
}

std::string footprint_iteration::label(const plan_traffic& traffic) const {
  if (executes_) return parts_.planned->label();
  if (parts_.variants != nullptr) {
    auto named = parts_.variants->label(variant_);
    if (!named.empty()) return named;
  }
  if (swaps_passively_ && traffic.swapped_out_bytes > 0) return std::string(passive_label);
  return {};
}

}  // namespace tandem::runtime::detail
