#pragma once
// A training job under a footprint plan (`planner =` in its [[job]], `tandem run --planner`).
// Iteration 0 makes the optimizer's state, iteration 1 is recorded as an access sequence and
// planned at the job's plan budget, iteration 2 runs plain and settles (the recorder's callbacks
// leave the next iteration slow: ResNet-20 at batch 8 took 8% longer in it than later) while its
// operations are timed for the plan's pricing (calibrate), iteration 3 runs plain as the vanilla
// reference the measures compare with, and every later iteration runs under the plan's executor.
// The iterations before the plan run in Capuchin's passive mode (torch/passive_swapper.hpp): when
// the budget is below the vanilla peak, the job's least recently used tensors go to host memory on
// demand, so they never need the vanilla peak; the recorded sequence is still the vanilla
// iteration's. Iterations 2 and 3 do so only once memory has proved short; until then they run as a
// plain job's (footprint_iteration.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "joint_footprint.hpp"
#include "tandem/device/copy_channel.hpp"
#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/footprint_budget.hpp"
#include "tandem/runtime/memory_monitor.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/torch/passive_swapper.hpp"
#include "tandem/torch/plan_executor.hpp"

namespace tandem::runtime::detail {

enum class planned_stage { warm_up, recorded, settling, reference, planned };

/// The plain iteration a planned job's measures compare with; the plan runs from the next.
inline constexpr std::int64_t reference_iteration = 3;

/// The part iteration `iteration` of a planned job plays.
[[nodiscard]] planned_stage stage_of(std::int64_t iteration);
/// The part it plays for a job offered plans by its policy (planned_variants.hpp), which
/// calibrates to no reference and so needs no settling: iteration 2 runs with passive swapping
/// on beside the plan its start names, and from 3 on passive swapping is only the fallback.
[[nodiscard]] planned_stage offered_stage_of(std::int64_t iteration);

/// A recorded iteration brought to the speed of a plain one.
struct calibration_result {
  footprint::access_sequence sequence;
  std::string how;  ///< footprint_result::calibration: "timed" or "scaled"
};

/// `recorded` brought to the speed of the plain iteration that lasted `reference_s`: each
/// operation takes what `timed` (one duration per operation, measured in a plain iteration)
/// says, the recorded idle time between them kept, and the whole is scaled to last
/// `reference_s` ("timed"); where `timed` does not fit (another count, or an iteration more
/// than twice as long or short as the reference), every recorded time is scaled to it
/// ("scaled"). Nothing where the reference is no like-for-like measure: not faster than the
/// recording, or more than twice as fast.
[[nodiscard]] std::optional<calibration_result> calibrated_sequence(
    const footprint::access_sequence& recorded, std::span<const double> timed, double reference_s);

/// What a real job's plans are priced at: copies at `copy_bandwidth` bytes/s, or at a memory
/// copy's speed when it is 0 ("memcpy": no PCIe in the way).
[[nodiscard]] footprint::cost_options real_plan_costs(double copy_bandwidth);

/// Leaves out of `plan` the decisions the executor cannot carry out: it finds a tensor by its
/// place among the iteration's allocations, or, for parameters and optimizer state (made before
/// the iteration, so with no such place), by the storage `persistent` holds for it; those it
/// does not hold are left out.
void keep_executable(footprint::plan& plan, const footprint::access_sequence& sequence,
                     const torch_support::persistent_storages& persistent);

/// What an executor moved between `before` (its counts at an iteration's start) and `after`.
[[nodiscard]] plan_traffic traffic_between(const torch_support::execution_stats& before,
                                           const torch_support::execution_stats& after);

/// Ends `executor`'s iteration and detaches it from `monitor` (as `job`'s sink) even when its
/// end() rethrows what its callbacks kept: a restarted iteration attaches again. Returns what it
/// moved since `before`.
[[nodiscard]] plan_traffic end_executing(torch_support::plan_executor& executor,
                                         memory_monitor& monitor, memory::job_id job,
                                         const torch_support::execution_stats& before);

/// What a passive swapper moved between `before` (its counts at an iteration's start) and `after`.
[[nodiscard]] plan_traffic passive_traffic(const torch_support::passive_stats& before,
                                           const torch_support::passive_stats& after);

/// How an iteration record names an iteration in which passive swapping moved tensors.
inline constexpr std::string_view passive_label = "passive swapping";

/// Iterations a planned job needs for one to run under its plan.
inline constexpr std::int64_t planned_job_min_iterations = reference_iteration + 2;

/// How many times a job planned alone is planned again for less after its plan needed passive
/// swapping beside it (planned_training::refit).
inline constexpr std::size_t max_refits = 3;

class planned_training {
 public:
  /// `copy_bandwidth`: bytes per second the plan prices copies at (0: memcpy speed).
  /// `joint`: where the job is planned with the others of its device when its planner plans
  /// jointly (tensile); nullptr plans it alone. `stop`: a stop requested ends a planner's
  /// search with its best plan (the job then stops at its next boundary).
  planned_training(std::string planner, std::optional<footprint_budget> budget,
                   double copy_bandwidth, memory::device_pool& pool, memory_monitor& monitor,
                   device::copy_channel& channel, memory::job_id job,
                   joint_footprint* joint = nullptr, std::stop_token stop = {});
  ~planned_training();
  planned_training(const planned_training&) = delete;
  planned_training& operator=(const planned_training&) = delete;

  /// Plans the recorded iteration, whose persistent tensors' storages are `persistent`; the
  /// executor runs the plan from then on, parameters and optimizer state included.
  void plan(footprint::access_sequence sequence, torch_support::persistent_storages persistent);
  [[nodiscard]] bool planned() const { return executor_ != nullptr; }

  /// Around each planned iteration, on the job's thread; end_iteration returns what the plan
  /// moved in it. begin_iteration first takes the job's new joint plan, if the others' arrival
  /// or departure made one.
  void begin_iteration();
  plan_traffic end_iteration();
  /// Around a settling iteration that runs plain, once planned: times its operations (an
  /// executor of a plan that moves nothing, whose callbacks only time them), which calibrate()
  /// prices the plan at. The recorded iteration's own times are no measure of them: its
  /// callbacks slow small operations most (ReLU 8x, a convolution 1.3x on ResNet-20).
  void begin_timing();
  void end_timing();
  /// The executor of the plan, once planned.
  [[nodiscard]] torch_support::plan_executor& executor() { return *executor_; }
  /// Passive swapping, the fallback beside the plan, moved `bytes` out in a planned iteration.
  void fell_back(std::size_t bytes) {
    fallback_swapped_out_bytes_ += bytes;
    plan_fallback_bytes_ += bytes;
    short_bytes_ += bytes;
  }

  /// The plan as an iteration record names it: the planner.
  [[nodiscard]] const std::string& label() const { return planner_; }

  /// After each of the job's iterations, with its iterations so far: calibrates the plan
  /// (calibrate), plans again for less where the plan did not hold by itself (refit), and
  /// returns its predictions beside what `log` measured.
  [[nodiscard]] footprint_result iteration_ended(const std::vector<iteration_record>& log);

 private:
  /// Once the plain reference iteration (reference_iteration) has run: the recorded iteration ran
  /// under the recorder's callbacks, which slow every operation (ResNet-110 at batch 4: 72 ms
  /// recorded against 57 ms plain), so the sequence is retimed and the plan priced again at the
  /// speed the job really runs. The operations keep the shares of the iteration the settling
  /// iteration timed (when it ran plain and matched the sequence), scaled to the length the
  /// reference measured (calibrated_sequence); without those times, the recorded ones are
  /// scaled to it. The plan's swap delays are scaled as the iteration. Not when the reference
  /// swapped passively, ran slower than the recording or more than twice as fast (something
  /// else changed its speed). A job planned jointly is priced so too; its plans keep coming from
  /// the group's planner, which follows the times the executor measures
  /// (joint_footprint::measured).
  void calibrate(const std::vector<iteration_record>& log);

  /// After a planned iteration in which passive swapping moved `short_bytes` out beside the
  /// plan: the plan counted live bytes, and the pool's regions (their rounding, the holes
  /// between tensors of different classes) held more than the budget around them. The same
  /// planner plans the calibrated sequence again, for the plan's predicted peak less what had
  /// to go, and the new plan runs from the next iteration: Capuchin's feedback, which moves a
  /// plan by what its last iteration measured, applied to the budget. At most max_refits
  /// times, and only while the new plan's predicted peak is lower; a job planned jointly is
  /// not refitted (its plans are the group's).
  void refit(std::size_t short_bytes);

  /// The plan's predictions and what `log` (the job's iterations) measured.
  [[nodiscard]] footprint_result result(const std::vector<iteration_record>& log) const;

  std::string planner_;
  std::optional<footprint_budget> budget_;
  footprint::cost_options costs_;
  memory::device_pool& pool_;
  memory_monitor& monitor_;
  device::copy_channel& channel_;
  memory::job_id job_;
  footprint_result planned_;  ///< the plan's side, filled by plan()
  std::unique_ptr<torch_support::plan_executor> executor_;
  /// Times the settling iteration's operations (begin_timing), into settled_s_.
  std::optional<torch_support::plan_executor> timer_;
  std::vector<double> settled_s_;
  torch_support::execution_stats before_;  ///< the executor's counts at the iteration's start
  joint_footprint* joint_;
  std::stop_token stop_;
  bool joined_ = false;  ///< planned with the device's other jobs
  std::uint64_t plan_version_ = 0;
  /// What a new plan's executor needs again: the recorded iteration and its storages.
  footprint::access_sequence sequence_;
  torch_support::persistent_storages persistent_;
  torch_support::execution_stats retired_;  ///< what executors of earlier plans did
  std::size_t replans_ = 0;                 ///< plans taken after the first
  std::size_t drift_replans_ = 0;           ///< plans this job's measured times set off
  bool calibrated_ = false;                 ///< calibrate() has looked at the reference

  /// After the running plan's first planned iteration: prices it again at the operation times
  /// that iteration measured (footprint_result::repriced_iteration_s, 0 until then).
  void reprice();

  /// Runs `plan` (made for sequence_) from the next iteration on; `replaces` counts it among
  /// the plans taken after the first.
  void adopt(footprint::plan plan, bool replaces = true);
  bool attached_ = false;
  std::size_t fallback_swapped_out_bytes_ = 0;
  std::size_t short_bytes_ = 0;  ///< the fallback's, in the iteration that just ended
  std::size_t refits_ = 0;
  bool refits_exhausted_ = false;  ///< the planner could cut no more, or max_refits were made
  // The plan running and the last one before it that ran an iteration: planned iterations run
  // under it and what the fallback moved beside it (footprint_result::last_plan_*).
  std::size_t plan_iterations_ = 0;
  std::size_t plan_fallback_bytes_ = 0;
  std::size_t ran_plan_fallback_bytes_ = 0;
};

}  // namespace tandem::runtime::detail
