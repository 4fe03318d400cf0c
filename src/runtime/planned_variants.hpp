#pragma once
// A training job whose policy chooses, iteration by iteration, between its plain iteration and
// footprint plans (`[policy] planner`; schedule::chooses_footprint). Iteration 0 makes the
// optimizer's state, iteration 1 is recorded as an access sequence and planned at each budget of
// footprint::plan_ladder; the plans are offered to the policy with their predicted curves of
// regions held (the recorded iteration's measured curve, its part above what the job holds
// between iterations scaled by the plan's predicted peak, and its times by the plan's predicted
// length), and each later iteration runs under the plan its grant names, or plain. The policy
// replaces a prediction by the measured curve once the variant has run, and the pool keeps the
// budget whatever the prediction.

#include <cstddef>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "tandem/device/copy_channel.hpp"
#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/memory_monitor.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/schedule/chooses_footprint.hpp"
#include "tandem/torch/plan_executor.hpp"

namespace tandem::runtime::detail {

class planned_variants {
 public:
  /// `planner`: a planner spec; `copy_bandwidth`: bytes/s plans price copies at (0: memcpy);
  /// `stop`: a stop requested ends a planner's search with its best plan.
  planned_variants(std::string planner, double copy_bandwidth, memory::device_pool& pool,
                   memory_monitor& monitor, device::copy_channel& channel, memory::job_id job,
                   std::stop_token stop = {});
  ~planned_variants();
  planned_variants(const planned_variants&) = delete;
  planned_variants& operator=(const planned_variants&) = delete;

  /// Plans the recorded iteration (`sequence`, whose regions held were `plain` over `plain_s`
  /// seconds) and returns the variants to offer: the plain one first, then each plan that holds
  /// at least a region less than the one before.
  ///
  /// `passive_live_peak`: the recorded iteration's live bytes at their highest when it swapped
  /// passively to stay within the budget, else 0. Its curve is then capped by what it gave up,
  /// and its time slowed by the copies: the plain variant is offered as measured (what a plain
  /// iteration does here), and each plan as that curve raised by the regions its predicted live
  /// peak exceeds the measured one, at its predicted time, so that a plan that spares the
  /// swapping is offered as faster than the plain iteration.
  [[nodiscard]] std::vector<schedule::footprint_variant> plan(footprint::access_sequence sequence,
                                                              const schedule::usage_curve& plain,
                                                              double plain_s,
                                                              std::size_t passive_live_peak = 0);

  /// Around an iteration run as `variant` (0: plain, nothing to do), on the job's thread;
  /// end_iteration returns what the plan moved in it (nothing for the plain one).
  void begin_iteration(std::size_t variant);
  plan_traffic end_iteration();
  /// The executor of the iteration under way (between begin and end_iteration); nullptr for
  /// the plain variant.
  [[nodiscard]] torch_support::plan_executor* running() const { return running_; }
  /// `variant` as offered ("tensile at 12.00 MiB"); empty for the plain one.
  [[nodiscard]] std::string label(std::size_t variant) const;

 private:
  std::string planner_;
  footprint::cost_options costs_;
  memory::device_pool& pool_;
  memory_monitor& monitor_;
  device::copy_channel& channel_;
  memory::job_id job_;
  std::stop_token stop_;
  // One executor per plan (variant k runs executors_[k - 1]).
  std::vector<std::unique_ptr<torch_support::plan_executor>> executors_;
  std::vector<std::string> labels_;  // of variants 1, 2, ...
  torch_support::plan_executor* running_ = nullptr;
  torch_support::execution_stats before_;  // the running executor's counts at its start
};

/// `plain` with its part above `held_at_start` scaled by `memory` (rounded up to whole regions of
/// `region_size`) and its times by `time`: how a plan predicted to keep that share of the peak
/// and to take that share longer holds regions.
[[nodiscard]] schedule::usage_curve scaled_curve(const schedule::usage_curve& plain, double memory,
                                                 double time, std::size_t region_size);

/// `measured` raised by `bytes` (rounded up to whole regions) from the first moment it holds its
/// most to its end, its times scaled by `time`: how an iteration that needs `bytes` more than a
/// measured one capped by passive swapping holds regions.
[[nodiscard]] schedule::usage_curve raised_curve(const schedule::usage_curve& measured,
                                                 std::size_t bytes, double time,
                                                 std::size_t region_size);

}  // namespace tandem::runtime::detail
