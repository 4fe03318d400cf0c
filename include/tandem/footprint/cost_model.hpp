#pragma once
// The one cost model of footprint plans, in the spirit of HOME's Algorithm 2 but at tensor
// granularity: replays an access sequence under a plan with one compute stream per job and one
// copy channel shared by every job on the device, and predicts the iteration's length and its
// memory curve. Planners, `tandem plan`, `tandem maxbatch --planner` and the simulator all price
// plans with it.
//
// The replay: operations run in order, each as soon as the one before it has ended and every
// tensor it reads is in device memory (a swap-in still under way stalls it: the consumer never
// computes on missing data; a recomputed tensor is rebuilt first, by running its creating
// operation again). The copy channel carries one copy at a time, in the order they were issued,
// at `copy_bandwidth`. Swaps are acted on as the executor acts on them, only when an operation
// starts or ends (cost_model.cpp, "Polls"). A tensor takes memory from the start of its
// creating operation until its release (after its last reader or `freed_after`), less the
// stretches a plan keeps it out.
// A plan with stretches across iterations (plan.hpp, Note [Stretches across iterations]) is
// priced in the steady state: consecutive iterations replayed until what each leaves to the next
// (copies still on the channel, tensors still being copied out) settles; the last is predicted.

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/plan.hpp"

namespace tandem::footprint {

struct cost_options {
  double copy_bandwidth = 12e9;  ///< bytes per second between device and host, each way
};

/// Memory held after a change, `at_s` from the iteration's start.
struct memory_point {
  double at_s = 0;
  std::size_t bytes = 0;
  friend bool operator==(const memory_point&, const memory_point&) = default;
};

/// When a swap decision's two copies ran on the channel (seconds from the iteration's start).
/// A copy is issued at the first poll its trigger and its release allow, starts when the
/// channel is free (the copies before it done), and is done bytes / copy_bandwidth later. All 0
/// for a recompute.
struct copy_timing {
  double out_issued_s = 0;
  double out_started_s = 0;
  double out_done_s = 0;
  double in_issued_s = 0;
  double in_started_s = 0;
  double in_done_s = 0;
  bool called_off = false;  ///< due back before its copy out was done: no copy in (all in_* 0)
  friend bool operator==(const copy_timing&, const copy_timing&) = default;
};

struct prediction {
  /// When the last operation ends, or after it the last copy out of a swap called off (needed
  /// back before that copy completed), which the iteration waits for.
  double iteration_s = 0;
  std::size_t peak_bytes = 0;  ///< the most held at once, other_bytes included
  std::vector<memory_point> curve;
  double stall_s = 0;      ///< operations waiting for swap-ins, and that wait at the end
  double recompute_s = 0;  ///< operations run again
  std::size_t swapped_out_bytes = 0;
  std::size_t swapped_in_bytes = 0;
  /// Swaps called off, their tensors' bytes: needed back before the copy out completed, they
  /// never left (cost_model.cpp, "Called off").
  std::size_t called_off_bytes = 0;
  /// When each operation of the sequence started (its reruns not included).
  std::vector<double> op_start_s;
  /// Per decision of the plan, in its order: when its copies ran. A stretch across iterations
  /// has its copy in early and its copy out late in the same iteration (the out may end after
  /// iteration_s, overlapping the next iteration's start).
  std::vector<copy_timing> copies;
  /// When the next iteration starts, in the steady state: the jobs replayed together start
  /// their iterations together, when the slowest one's last operation ends.
  double next_iteration_s = 0;
  /// When the channel ran the previous iteration's copies that were still on it at this one's
  /// start (copies out of stretches across iterations that ran past its end): start and end,
  /// as this iteration's times. The same list in every job's prediction of a replay.
  std::vector<std::pair<double, double>> carried_copies;
};

/// One job's iteration under its plan.
[[nodiscard]] prediction predict(const access_sequence& sequence, const plan& p,
                                 const cost_options& options = {});

struct planned_job {
  const access_sequence* sequence = nullptr;
  const footprint::plan* plan = nullptr;  // qualified: the member shares the type's name
};

/// Several jobs' iterations started together on one device: each on its own compute stream, all
/// their copies on one channel in the order they were issued. One prediction per job.
[[nodiscard]] std::vector<prediction> predict_together(std::span<const planned_job> jobs,
                                                       const cost_options& options = {});

/// TENSILE's measures of a plan against keeping everything (§6): memory saving ratio
/// MSR = 1 - planned peak / vanilla peak, extra overhead ratio EOR = extra time / vanilla time,
/// cost-benefit ratio CBR = MSR / EOR (infinite when nothing is lost, 0 when nothing is saved).
struct plan_ratios {
  double msr = 0;
  double eor = 0;
  double cbr = 0;
};

/// MSR, EOR and CBR of a planned peak and time against the vanilla ones, predicted or measured
/// (a ratio whose denominator is 0 stays 0).
[[nodiscard]] plan_ratios ratios_of(std::size_t vanilla_peak_bytes, std::size_t planned_peak_bytes,
                                    double vanilla_s, double planned_s);

struct plan_measures {
  std::size_t vanilla_peak_bytes = 0;
  std::size_t planned_peak_bytes = 0;
  double vanilla_s = 0;
  double planned_s = 0;
  double msr = 0;
  double eor = 0;
  double cbr = 0;
  std::size_t swapped_tensors = 0;     ///< distinct tensors with a swap decision
  std::size_t recomputed_tensors = 0;  ///< distinct tensors with a recompute decision
  std::size_t bytes_moved = 0;         ///< out and in
};

[[nodiscard]] plan_measures measure(const access_sequence& sequence, const plan& p,
                                    const cost_options& options = {});

}  // namespace tandem::footprint
