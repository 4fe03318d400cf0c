#include "planned_variants.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "planned_training.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/plan_ladder.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::runtime::detail {

schedule::usage_curve scaled_curve(const schedule::usage_curve& plain, double memory, double time,
                                   std::size_t region_size) {
  schedule::usage_curve out;
  out.held_at_start = plain.held_at_start;
  out.duration_s = plain.duration_s * time;
  const auto region = static_cast<double>(std::max<std::size_t>(region_size, 1));
  const auto scale = [&](std::int64_t above) {
    if (above <= 0) return std::int64_t{0};
    const double regions = std::ceil(static_cast<double>(above) * memory / region);
    return static_cast<std::int64_t>(regions * region);
  };
  std::int64_t above = 0;   // the plain curve above its start
  std::int64_t scaled = 0;  // the scaled one
  for (const auto& step : plain.steps) {
    above += step.delta;
    const auto next = scale(above);
    if (next != scaled) out.steps.push_back({step.at_s * time, next - scaled});
    scaled = next;
  }
  if (scaled != 0) out.steps.push_back({out.duration_s, -scaled});  // back to the start
  return out;
}

schedule::usage_curve raised_curve(const schedule::usage_curve& measured, std::size_t bytes,
                                   double time, std::size_t region_size) {
  schedule::usage_curve out;
  out.held_at_start = measured.held_at_start;
  out.duration_s = measured.duration_s * time;
  const auto region = std::max<std::size_t>(region_size, 1);
  const auto raise = static_cast<std::int64_t>((bytes + region - 1) / region * region);
  // Raised from the first moment the measured curve is at its highest to the end.
  std::int64_t level = 0;
  std::int64_t highest = 0;
  std::size_t peak_after = 0;  // steps before the highest point (0: it is the start)
  for (std::size_t i = 0; i < measured.steps.size(); ++i) {
    level += measured.steps[i].delta;
    if (level > highest) {
      highest = level;
      peak_after = i + 1;
    }
  }
  if (raise > 0 && peak_after == 0) out.steps.push_back({0.0, raise});
  for (std::size_t i = 0; i < measured.steps.size(); ++i) {
    const double at_s = measured.steps[i].at_s * time;
    out.steps.push_back({at_s, measured.steps[i].delta});
    if (raise > 0 && i + 1 == peak_after) out.steps.push_back({at_s, raise});
  }
  if (raise > 0) out.steps.push_back({out.duration_s, -raise});
  return out;
}

planned_variants::planned_variants(std::string planner, double copy_bandwidth,
                                   memory::device_pool& pool, memory_monitor& monitor,
                                   device::copy_channel& channel, memory::job_id job,
                                   std::stop_token stop)
    : planner_(std::move(planner)),
      costs_(real_plan_costs(copy_bandwidth)),
      pool_(pool),
      monitor_(monitor),
      channel_(channel),
      job_(job),
      stop_(std::move(stop)) {}

planned_variants::~planned_variants() {
  // An iteration cut short: stop the events before the executor goes (it waits for its copies).
  if (running_ != nullptr) monitor_.detach(job_);
}

std::vector<schedule::footprint_variant> planned_variants::plan(footprint::access_sequence sequence,
                                                                const schedule::usage_curve& plain,
                                                                double plain_s,
                                                                std::size_t passive_live_peak) {
  std::vector<schedule::footprint_variant> variants;
  variants.push_back({"none", plain, plain_s});
  const auto vanilla = footprint::predict(sequence, footprint::plan{}, costs_);
  if (vanilla.curve.empty() || vanilla.iteration_s <= 0) return variants;
  std::size_t floor = vanilla.curve.front().bytes;
  for (const auto& point : vanilla.curve) floor = std::min(floor, point.bytes);
  const auto region = pool_.options().region_size;
  // Passive swapping capped the recorded iteration: each plan is offered as the measured curve
  // raised by what its predicted live peak exceeds the measured one, at its predicted time, and
  // must hold a region less than the vanilla iteration raised the same way. Otherwise each is
  // the measured curve scaled by its share of the vanilla peak above the floor and of its time.
  const bool capped =
      passive_live_peak > 0 && vanilla.peak_bytes > passive_live_peak && plain_s > 0;
  const auto offered = [&](std::size_t live_peak, double iteration_s) {
    if (capped) {
      const auto excess = live_peak - std::min(live_peak, passive_live_peak);
      return raised_curve(plain, excess, iteration_s / plain_s, region);
    }
    const double memory = static_cast<double>(live_peak - std::min(live_peak, floor)) /
                          static_cast<double>(vanilla.peak_bytes - floor);
    return scaled_curve(plain, memory, iteration_s / vanilla.iteration_s, region);
  };
  const auto offered_s = [&](double iteration_s) {
    return capped ? iteration_s : plain_s * (iteration_s / vanilla.iteration_s);
  };
  std::size_t least_held = plain.peak();
  if (capped) {
    // Capped only because others held memory meanwhile (raised, the vanilla iteration fits the
    // budget alone): the plain variant is offered as it runs with room, the vanilla iteration
    // at its predicted time, and waits for that room. Else passive swapping is the only way it
    // runs, and it is offered as measured, slow.
    auto roomy = offered(vanilla.peak_bytes, vanilla.iteration_s);
    least_held = roomy.peak();
    if (roomy.peak() <= pool_.budget())
      variants.front() = {"none", std::move(roomy), vanilla.iteration_s};
  }
  const auto maker = footprint::make_planner(planner_);
  for (const auto budget : footprint::plan_ladder(floor, vanilla.peak_bytes)) {
    auto made =
        maker->make_plan(sequence, {.budget_bytes = budget, .costs = costs_, .stop = stop_});
    // Parameters and optimizer state stay in place: a plan's swap across the boundary would
    // leave them out for whichever variant runs next.
    keep_executable(made, sequence, {});
    if (made.decisions.empty()) continue;
    const auto predicted = footprint::predict(sequence, made, costs_);
    auto curve = offered(predicted.peak_bytes, predicted.iteration_s);
    if (curve.peak() + region > least_held) continue;  // not a region less than the one before
    least_held = curve.peak();
    labels_.push_back(planner_ + " at " + format_bytes(budget));
    variants.push_back({labels_.back(), std::move(curve), offered_s(predicted.iteration_s)});
    executors_.push_back(std::make_unique<torch_support::plan_executor>(pool_, job_, channel_,
                                                                        sequence, std::move(made)));
  }
  return variants;
}

void planned_variants::begin_iteration(std::size_t variant) {
  if (variant == 0 || variant > executors_.size()) return;
  running_ = executors_[variant - 1].get();
  monitor_.attach(job_, running_);
  before_ = running_->stats();
  running_->begin();
}

plan_traffic planned_variants::end_iteration() {
  if (running_ == nullptr) return {};
  return end_executing(*std::exchange(running_, nullptr), monitor_, job_, before_);
}

std::string planned_variants::label(std::size_t variant) const {
  return variant == 0 || variant > labels_.size() ? std::string() : labels_[variant - 1];
}

}  // namespace tandem::runtime::detail
