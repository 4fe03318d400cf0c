#include "planned_training.hpp"

#include <algorithm>
#include <utility>

#include "tandem/footprint/planner.hpp"

namespace tandem::runtime::detail {

namespace {

/// What "memcpy" copies are priced at: no PCIe in the way, a memory copy's order of magnitude.
constexpr double memcpy_bytes_per_s = 10e9;

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// Warm-up, recorded, settling until `reference`, then the reference and the planned ones.
planned_stage stage_before(std::int64_t reference, std::int64_t iteration) {
  if (iteration == 0) return planned_stage::warm_up;
  if (iteration == 1) return planned_stage::recorded;
  if (iteration < reference) return planned_stage::settling;
  return iteration == reference ? planned_stage::reference : planned_stage::planned;
}

}  // namespace

footprint::cost_options real_plan_costs(double copy_bandwidth) {
  footprint::cost_options costs;
  costs.copy_bandwidth = copy_bandwidth > 0 ? copy_bandwidth : memcpy_bytes_per_s;
  return costs;
}

void keep_executable(footprint::plan& plan, const footprint::access_sequence& sequence,
                     const torch_support::persistent_storages& persistent) {
  std::erase_if(plan.decisions, [&](const footprint::decision& d) {
    const auto& t = sequence.tensors[d.tensor];
    return !t.allocation.has_value() && (t.created_by || !persistent.contains(d.tensor));
  });
}

std::optional<calibration_result> calibrated_sequence(const footprint::access_sequence& recorded,
                                                      std::span<const double> timed,
                                                      double reference_s) {
  const double recorded_s = recorded.iteration_s();
  if (!(reference_s > 0) || !(recorded_s > 0)) return std::nullopt;
  // A reference more than twice as fast as the recording is no like-for-like measure either.
  if (reference_s >= recorded_s || reference_s < recorded_s / 2) return std::nullopt;
  const auto scaled_to_reference = [reference_s](footprint::access_sequence s) {
    const double factor = reference_s / s.iteration_s();
    for (auto& op : s.operations) {
      op.start_s *= factor;
      op.duration_s *= factor;
    }
    return s;
  };
  if (timed.size() == recorded.operations.size()) {
    auto retimed = recorded.with_durations(timed);
    const double length = retimed.iteration_s();
    // The timing iteration, the first after the recording, runs slower than later ones too
    // (its operations alone outlasted the whole reference on ResNet-20): each operation's share
    // of it is kept, its length is the reference's.
    if (length > reference_s / 2 && length < reference_s * 2)
      return calibration_result{scaled_to_reference(std::move(retimed)), "timed"};
  }
  return calibration_result{scaled_to_reference(recorded), "scaled"};
}

planned_stage stage_of(std::int64_t iteration) {
  return stage_before(reference_iteration, iteration);
}

planned_stage offered_stage_of(std::int64_t iteration) {
  return stage_before(2, iteration);  // nothing to settle for: no calibration
}

planned_training::planned_training(std::string planner, std::optional<footprint_budget> budget,
                                   double copy_bandwidth, memory::device_pool& pool,
                                   memory_monitor& monitor, device::copy_channel& channel,
                                   memory::job_id job, joint_footprint* joint, std::stop_token stop)
    : planner_(std::move(planner)),
      budget_(budget),
      costs_(real_plan_costs(copy_bandwidth)),
      pool_(pool),
      monitor_(monitor),
      channel_(channel),
      job_(job),
      joint_(joint),
      stop_(std::move(stop)) {
  planned_.planner = planner_;
}

planned_training::~planned_training() {
  // An iteration cut short: stop the events before the executor goes (it waits for its copies).
  if (attached_) monitor_.detach(job_);
  if (joined_) joint_->leave(job_);  // the others are planned again without it
}

void planned_training::plan(footprint::access_sequence sequence,
                            torch_support::persistent_storages persistent) {
  const auto vanilla = footprint::predict(sequence, footprint::plan{}, costs_);
  const auto budget = budget_ ? budget_->bytes_for(vanilla.peak_bytes) : std::size_t{0};
  planned_.budget_bytes = budget;
  sequence_ = std::move(sequence);
  persistent_ = std::move(persistent);
  if (joint_ != nullptr && joint_footprint::plans_jointly(planner_)) {
    joined_ = true;
    adopt(joint_->join(job_, planner_, sequence_, budget, plan_version_));
  } else {
    adopt(footprint::make_planner(planner_)->make_plan(
        sequence_, {.budget_bytes = budget, .costs = costs_, .stop = stop_}));
  }
}

footprint_result planned_training::iteration_ended(const std::vector<iteration_record>& log) {
  calibrate(log);
  if (executor_ && log.size() > static_cast<std::size_t>(reference_iteration) + 1) {
    ++plan_iterations_;  // the iteration that ended ran under the plan
    const auto short_bytes = std::exchange(short_bytes_, 0);
    if (short_bytes > 0) refit(short_bytes);
  }
  return result(log);
}

void planned_training::refit(std::size_t short_bytes) {
  if (joined_ || refits_exhausted_) return;
  const auto peak = planned_.predicted_peak_bytes;
  if (refits_ >= max_refits || short_bytes >= peak) {
    refits_exhausted_ = true;
    return;
  }
  const auto budget = peak - short_bytes;
  auto plan = footprint::make_planner(planner_)->make_plan(
      sequence_, {.budget_bytes = budget, .costs = costs_, .stop = stop_});
  keep_executable(plan, sequence_, persistent_);
  if (footprint::predict(sequence_, plan, costs_).peak_bytes >= peak) {
    refits_exhausted_ = true;  // the planner cuts no more: the fallback stays beside this plan
    return;
  }
  ++refits_;
  planned_.budget_bytes = budget;
  adopt(std::move(plan));
}

void planned_training::calibrate(const std::vector<iteration_record>& log) {
  constexpr auto at = static_cast<std::size_t>(reference_iteration);
  if (calibrated_ || log.size() <= at || !executor_) return;
  calibrated_ = true;
  timer_.reset();
  const auto& reference = log[at];
  if (reference.traffic.swapped_out_bytes > 0) return;
  const double recorded = sequence_.iteration_s();
  auto calibrated = calibrated_sequence(sequence_, settled_s_, reference.end_s - reference.start_s);
  if (!calibrated) return;
  sequence_ = std::move(calibrated->sequence);
  planned_.calibration = std::move(calibrated->how);
  // The same decisions, their timed swaps as much sooner as the iteration, priced again: no
  // second search (an `optimal` or `home` plan may take a minute to make).
  const double factor = sequence_.iteration_s() / recorded;
  auto plan = executor_->plan();
  for (auto& d : plan.decisions) {
    d.swap_out.delay_s *= factor;
    d.swap_in.delay_s *= factor;
  }
  adopt(std::move(plan), false);
}

void planned_training::adopt(footprint::plan plan, bool replaces) {
  keep_executable(plan, sequence_, persistent_);  // and priced below as it runs
  const auto measures = footprint::measure(sequence_, plan, costs_);
  planned_.swapped_tensors = measures.swapped_tensors;
  planned_.recomputed_tensors = measures.recomputed_tensors;
  planned_.predicted_vanilla_peak_bytes = measures.vanilla_peak_bytes;
  planned_.predicted_peak_bytes = measures.planned_peak_bytes;
  planned_.predicted_vanilla_iteration_s = measures.vanilla_s;
  planned_.predicted_iteration_s = measures.planned_s;
  planned_.predicted_msr = measures.msr;
  planned_.predicted_eor = measures.eor;
  if (plan_iterations_ > 0) ran_plan_fallback_bytes_ = plan_fallback_bytes_;
  plan_iterations_ = 0;
  plan_fallback_bytes_ = 0;
  auto next = std::make_unique<torch_support::plan_executor>(pool_, job_, channel_, sequence_,
                                                             std::move(plan), nullptr, persistent_);
  if (executor_) {
    // What the old plan left out across the boundary comes back before the new one runs, or
    // passes to it where no memory comes.
    executor_->bring_back(next.get());
    retired_ += executor_->stats();
    if (replaces) ++replans_;
  }
  executor_ = std::move(next);
  // TENSILE's online re-planning reads them, and reprice() those of a plan's first iteration;
  // a plan that moves nothing runs without callbacks otherwise.
  executor_->measure_durations(joined_ || !executor_->plan().decisions.empty());
  planned_.repriced_iteration_s = 0;
  planned_.repriced_peak_bytes = 0;
}

plan_traffic traffic_between(const torch_support::execution_stats& before,
                             const torch_support::execution_stats& after) {
  return {after.swapped_out_bytes - before.swapped_out_bytes,
          after.swapped_in_bytes - before.swapped_in_bytes, after.recompute_s - before.recompute_s};
}

plan_traffic end_executing(torch_support::plan_executor& executor, memory_monitor& monitor,
                           memory::job_id job, const torch_support::execution_stats& before) {
  try {
    executor.end();
  } catch (...) {
    monitor.detach(job);
    throw;
  }
  monitor.detach(job);
  return traffic_between(before, executor.stats());
}

plan_traffic passive_traffic(const torch_support::passive_stats& before,
                             const torch_support::passive_stats& after) {
  return {after.swapped_out_bytes - before.swapped_out_bytes,
          after.swapped_in_bytes - before.swapped_in_bytes, 0};
}

void planned_training::begin_timing() {
  if (!timer_) {
    timer_.emplace(pool_, job_, channel_, sequence_, footprint::plan{}, nullptr, persistent_);
    timer_->measure_durations(true);
  }
  monitor_.attach(job_, &*timer_);
  attached_ = true;
  timer_->begin();
}

void planned_training::end_timing() {
  attached_ = false;
  static_cast<void>(end_executing(*timer_, monitor_, job_, timer_->stats()));
  settled_s_ = timer_->measured_durations();  // none where the iteration did not match
}

void planned_training::begin_iteration() {
  if (joined_) {
    if (auto newer = joint_->newer_plan(job_, plan_version_)) adopt(std::move(*newer));
  }
  monitor_.attach(job_, executor_.get());
  attached_ = true;
  before_ = executor_->stats();
  executor_->begin();
}

plan_traffic planned_training::end_iteration() {
  attached_ = false;
  auto traffic = end_executing(*executor_, monitor_, job_, before_);
  reprice();
  // TENSILE's online re-planning: what this iteration's operations took under the plan.
  if (joined_ && joint_->measured(job_, executor_->measured_durations())) ++drift_replans_;
  return traffic;
}

void planned_training::reprice() {
  const auto& measured = executor_->measured_durations();
  if (planned_.repriced_iteration_s > 0 || executor_->plan().decisions.empty() || measured.empty())
    return;
  const auto prediction =
      footprint::predict(sequence_.with_durations(measured), executor_->plan(), costs_);
  planned_.repriced_iteration_s = prediction.iteration_s;
  planned_.repriced_peak_bytes = prediction.peak_bytes;
}

footprint_result planned_training::result(const std::vector<iteration_record>& log) const {
  auto out = planned_;
  const auto seconds = [](const iteration_record& r) { return r.end_s - r.start_s; };
  constexpr auto at = static_cast<std::size_t>(reference_iteration);
  for (std::size_t i = 0; i < log.size() && i <= at; ++i)
    out.passive_swapped_out_bytes += log[i].traffic.swapped_out_bytes;
  out.fallback_swapped_out_bytes = fallback_swapped_out_bytes_;
  out.last_plan_fallback_bytes =
      plan_iterations_ > 0 ? plan_fallback_bytes_ : ran_plan_fallback_bytes_;
  out.refits = refits_;
  if (log.size() > at) {
    const auto& reference = log[at];
    out.vanilla_peak_bytes = reference.peak_bytes;
    out.vanilla_iteration_s = seconds(reference);
    if (reference.traffic.swapped_out_bytes > 0) {
      out.vanilla_peak_bytes = out.predicted_vanilla_peak_bytes;
      out.vanilla_iteration_s = out.predicted_vanilla_iteration_s;
      out.vanilla_predicted = true;
    }
  }
  std::vector<double> planned_s;
  for (std::size_t i = at + 1; i < log.size(); ++i) {
    planned_s.push_back(seconds(log[i]));
    out.planned_peak_bytes = std::max(out.planned_peak_bytes, log[i].peak_bytes);
  }
  out.planned_iterations = planned_s.size();
  out.planned_iteration_s = median(planned_s);
  if (out.planned_iterations > 0) {
    const auto ratios = footprint::ratios_of(out.vanilla_peak_bytes, out.planned_peak_bytes,
                                             out.vanilla_iteration_s, out.planned_iteration_s);
    out.msr = ratios.msr;
    out.eor = ratios.eor;
    out.cbr = ratios.cbr;
  }
  if (executor_) {
    auto stats = retired_;
    stats += executor_->stats();
    out.swapped_out_bytes = stats.swapped_out_bytes;
    out.swapped_in_bytes = stats.swapped_in_bytes;
    out.recomputations = stats.recomputations;
    out.stall_s = stats.stall_s;
    out.recompute_s = stats.recompute_s;
    out.missed_decisions = stats.missed;
    out.diverged_iterations = stats.diverged_iterations;
    out.evicted_bytes = stats.evicted_bytes;
    out.host_read_bytes = stats.host_read_bytes;
    out.replans = replans_;
    out.drift_replans = drift_replans_;
  }
  return out;
}

}  // namespace tandem::runtime::detail
