#include "tandem/sim/planned_profile.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <utility>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/sim/region_replay.hpp"

namespace tandem::sim {
namespace {

/// Re-plans at most this many times for a share (plan_for_share): region rounding is a few
/// regions at most, so one or two more plans settle it.
constexpr int max_share_attempts = 4;

std::string percent_text(double percent) {
  std::ostringstream text;
  text << percent << '%';
  return text.str();
}

/// The planned curve as allocations and frees on top of its least value: a stack of chunks, one
/// pushed for every rise, popped from the top for every fall (the chunk the fall cuts into is
/// freed and its remainder allocated again at once). Frees always return the most recent live
/// allocation, as the replay expects, and the live bytes after each instant are the curve's.
class curve_steps {
 public:
  curve_steps(std::vector<memory_step>& steps, std::size_t floor) : steps_(steps), floor_(floor) {}

  void hold(double at_s, std::size_t bytes) {
    const std::size_t target = bytes - floor_;
    if (target > level_) {
      allocate(at_s, target - level_);
    } else {
      release(at_s, level_ - target);
    }
    level_ = target;
  }

  /// Frees what is still live (a curve that ends above its least value).
  void finish(double at_s) { release(at_s, level_); }

 private:
  void allocate(double at_s, std::size_t bytes) {
    chunks_.push_back(bytes);
    steps_.push_back({at_s, static_cast<std::int64_t>(bytes), kind});
  }

  void release(double at_s, std::size_t bytes) {
    while (bytes > 0) {
      const auto top = chunks_.back();
      chunks_.pop_back();
      steps_.push_back({at_s, -static_cast<std::int64_t>(top), kind});
      if (top > bytes) {
        allocate(at_s, top - bytes);
        return;
      }
      bytes -= top;
    }
  }

  /// The pool keeps feature maps (and everything else large that is not ephemeral) in large
  /// regions; a planned iteration's memory above its floor is mostly feature maps.
  static constexpr auto kind = memory::alloc_kind::feature_map;
  std::vector<memory_step>& steps_;
  std::size_t floor_;
  std::size_t level_ = 0;
  std::vector<std::size_t> chunks_;
};

}  // namespace

std::size_t plan_budget::bytes_for(std::size_t vanilla_peak_bytes) const {
  if (bytes > 0) return bytes;
  const double share = static_cast<double>(vanilla_peak_bytes) * percent / 100.0;
  return std::max<std::size_t>(1, static_cast<std::size_t>(share));
}

std::string plan_budget::describe() const {
  if (bytes > 0) return format_bytes(bytes);
  return percent_text(percent) + " of the vanilla peak";
}

plan_budget parse_plan_budget(std::string_view text) {
  const auto forms = std::string(
      "; a plan budget is a share of the job's vanilla peak (\"75%\", above 0 and at most 100) "
      "or a size (\"6GiB\", \"512MiB\")");
  TANDEM_EXPECTS(!text.empty(), config_error, "the plan budget is empty" + forms);
  if (text.back() == '%') {
    const auto number = text.substr(0, text.size() - 1);
    double percent = 0;
    const auto [end, status] =
        std::from_chars(number.data(), number.data() + number.size(), percent);
    TANDEM_EXPECTS(status == std::errc{} && end == number.data() + number.size() &&
                       std::isfinite(percent) && percent > 0 && percent <= 100,
                   config_error, "cannot read the plan budget '" + std::string(text) + "'" + forms);
    return {percent, 0};
  }
  std::size_t bytes = 0;
  try {
    bytes = parse_bytes(text);
  } catch (const config_error&) {
    TANDEM_FAIL(config_error, "cannot read the plan budget '" + std::string(text) + "'" + forms);
  }
  TANDEM_EXPECTS(bytes > 0, config_error,
                 "the plan budget '" + std::string(text) + "' is 0 bytes" + forms);
  return {0, bytes};
}

void check_planner(std::string_view planner) {
  try {
    static_cast<void>(footprint::make_planner(planner));
  } catch (const usage_error& e) {
    throw config_error(e.what());  // input from a flag or a file: the user's to fix
  }
}

job_profile profile_from_prediction(const job_profile& vanilla,
                                    const footprint::access_sequence& sequence,
                                    const footprint::prediction& predicted,
                                    const std::string& planner, std::size_t region_size,
                                    bool as_variant) {
  const double sequence_s = sequence.iteration_s();
  const double vanilla_s = vanilla.solo_iteration_s();
  TANDEM_EXPECTS(sequence_s > 0 && vanilla_s > 0 && predicted.iteration_s > 0, usage_error,
                 vanilla.model + ": a planned profile needs an iteration with a duration");
  TANDEM_EXPECTS(!predicted.curve.empty(), usage_error,
                 vanilla.model + ": the prediction has no memory curve");
  const double stretch = predicted.iteration_s / sequence_s;
  // The prediction's times are on the sequence's clock; the profile's iteration may have been
  // measured apart from it (a recorded profile's steady iteration against its last one).
  const double clock = vanilla_s / sequence_s;
  // The device computes the sequence's operations and the reruns; a stall leaves it idle.
  const double busy = std::min(1.0, (sequence_s + predicted.recompute_s) / predicted.iteration_s);

  job_profile planned;
  planned.model = vanilla.model;
  planned.batch_size = vanilla.batch_size;
  planned.source = vanilla.source + ", planned by " + planner;
  planned.setup_s = vanilla.setup_s;
  // Each operation is the whole of its stretched solo time on the device (no host part): the
  // prediction already is the iteration's length, host gaps included, and a host part left
  // unstretched would overlap it differently.
  for (const auto& op : vanilla.operations) {
    if (as_variant) {
      planned.operations.push_back({op.name, op.solo_s * stretch, op.fill * busy, op.bytes_touched,
                                    op.host_s, op.device_s < 0 ? -1.0 : op.device_s * stretch});
    } else {
      planned.operations.push_back(
          {op.name, op.solo_s * stretch, op.fill * busy, op.bytes_touched, 0.0, -1.0});
    }
  }
  const double end_s = planned.solo_iteration_s();

  std::size_t floor = predicted.curve.front().bytes;
  for (const auto& point : predicted.curve) floor = std::min(floor, point.bytes);
  if (as_variant) {
    planned.persistent_tensors = vanilla.persistent_tensors;
    floor = vanilla.persistent_bytes();
  } else if (floor > 0) {
    planned.persistent_tensors.push_back(floor);
  }
  curve_steps steps(planned.steps, floor);
  for (const auto& point : predicted.curve)
    steps.hold(std::min(point.at_s * clock, end_s), std::max(point.bytes, floor));
  steps.finish(end_s);
  replay_regions(planned, region_size);
  planned.plan = planner;
  // On the profile's clock, as its operations are.
  planned.traffic = {predicted.swapped_out_bytes, predicted.swapped_in_bytes,
                     predicted.recompute_s * clock};
  return planned;
}

planned_iteration plan_iteration(const job_profile& vanilla,
                                 const footprint::access_sequence& sequence,
                                 std::string_view planner, std::size_t budget_bytes,
                                 double copy_bandwidth, std::size_t region_size) {
  check_planner(planner);
  const footprint::cost_options costs{.copy_bandwidth = copy_bandwidth};
  planned_iteration planned;
  planned.plan = footprint::make_planner(planner)->make_plan(
      sequence, {.budget_bytes = budget_bytes, .costs = costs});
  planned.vanilla = footprint::predict(sequence, footprint::plan{}, costs);
  if (planned.plan.decisions.empty()) {
    // Nothing moves: the iteration is the profile's (the cost model replays an empty plan
    // exactly), and its allocations stay the generator's.
    planned.predicted = planned.vanilla;
    planned.profile = vanilla;
    return planned;
  }
  planned.predicted = footprint::predict(sequence, planned.plan, costs);
  planned.profile = profile_from_prediction(vanilla, sequence, planned.predicted,
                                            std::string(planner), region_size);
  return planned;
}

planned_iteration plan_for_share(const job_profile& vanilla,
                                 const footprint::access_sequence& sequence,
                                 std::string_view planner, std::size_t share_bytes,
                                 double copy_bandwidth, std::size_t region_size) {
  auto planned =
      plan_iteration(vanilla, sequence, planner, share_bytes, copy_bandwidth, region_size);
  for (int attempt = 1; attempt < max_share_attempts; ++attempt) {
    const auto held = planned.profile.held.peak();
    // Below what the plan reached (a planner stops once the budget fits), by what the regions
    // came above the share.
    const auto reached = std::min(planned.plan.budget_bytes, planned.predicted.peak_bytes);
    if (held <= share_bytes || held - share_bytes >= reached) break;
    auto again = plan_iteration(vanilla, sequence, planner, reached - (held - share_bytes),
                                copy_bandwidth, region_size);
    // A planner that ignores the budget (vDNN, none) makes the same plan again: nothing gained.
    if (again.plan.decisions == planned.plan.decisions) break;
    planned = std::move(again);
  }
  return planned;
}

}  // namespace tandem::sim
