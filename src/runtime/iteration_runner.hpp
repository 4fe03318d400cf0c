#pragma once
// Runs and measures one iteration of a job (a training step, a warm-up, a request, an iteration
// of a user's own loop): the memory window, the operations, the classifier, the group gating
// and the report. Every kind of job goes through it, so a policy sees their iterations measured
// the same way.

#include <cstdint>
#include <memory>
#include <utility>

#include "group_gate.hpp"
#include "tandem/memory/tensor_classifier.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"
#include "training_job.hpp"

namespace tandem::runtime::detail {

class operation_recorder;

/// Operations are recorded with the allocations, in the last iteration only: the callbacks
/// slow ops a little, and the other iterations' times stay as they would be unrecorded. A job
/// run for a duration has no known last iteration, so each of its iterations records.
[[nodiscard]] bool records_operations(const job_spec& spec, std::int64_t iteration,
                                      const memory_monitor& monitor);

class iteration_runner {
 public:
  /// `classifier`: the one the job's binding uses, or nullptr when it uses none.
  iteration_runner(const job_spec& spec, memory::job_id id, training_context& context,
                   memory::tensor_classifier* classifier, group_gate& groups, job_result& result);
  ~iteration_runner();
  iteration_runner(const iteration_runner&) = delete;
  iteration_runner& operator=(const iteration_runner&) = delete;

  /// Starts iteration `iteration` (the gate let it start); the job's thread runs it next.
  void begin(std::int64_t iteration);
  /// Ends the iteration begun, started at `start_s`, and returns what it measured.
  [[nodiscard]] schedule::iteration_report end(double start_s);
  /// Ends the iteration begun as cut short (it runs again: iteration_restarted): what it held
  /// up to the cut, with restarted set. The classifier learns nothing from it and no detail is
  /// kept.
  [[nodiscard]] schedule::iteration_report abandon(double start_s);
  /// The iteration begun is being cut short: its group boundaries hold no more, so that what
  /// its footprint brings back while it lets go does not wait for a group that the others,
  /// waiting for its regions, would never let it into. Before the footprint's cut.
  void stop_gating();

  /// The results' record of the iteration ended as `report`: its times and peak, `loss`, when it
  /// asked to start (`requested_s`) and what it waited mid-way, for regions and at group
  /// boundaries, since begin().
  [[nodiscard]] iteration_record record(const schedule::iteration_report& report,
                                        double requested_s, double loss) const;

  /// Runs `step` as iteration `iteration`, started (let start by the gate) at `start_s`.
  template <typename Step>
  schedule::iteration_report run(std::int64_t iteration, double start_s, Step&& step) {
    begin(iteration);
    std::forward<Step>(step)();
    return end(start_s);
  }

 private:
  const job_spec& spec_;
  memory::job_id id_;
  training_context& context_;
  memory::tensor_classifier* classifier_;
  group_gate& groups_;
  job_result& result_;
  std::unique_ptr<operation_recorder> recorder_;
  bool classified_ = false;
  // Seconds the job had waited for regions and at group boundaries when the iteration began.
  double memory_waited_at_begin_s_ = 0;
  double group_waited_at_begin_s_ = 0;

  /// Closes the iteration's gating and makes its frees reach the other jobs.
  void close_gating();
};

}  // namespace tandem::runtime::detail
