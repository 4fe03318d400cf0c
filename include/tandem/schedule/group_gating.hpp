#pragma once
// An optional capability of a policy: group gating (Waterwave's NodeGroup). The policy cuts a
// job's iteration into groups, each starting at an allocation. At each iteration start the
// driver reads group_boundaries(job), allocation ordinals counted from the iteration's start;
// when the job is about to make the allocation at a boundary, the driver makes the memory the
// job freed usable (SyncAndCoalesce), reports on_group_end (an event, like an iteration end) and
// asks may_enter_group with the same verdicts as policy::may_start. Group 0 is the iteration
// itself: may_start opens it, on_iteration_end closes the last group.
//
// A driver discovers it once (policy_capabilities.hpp); without it there are no groups and
// iteration reports carry no memory events. Calls are serialized with the policy's others.

#include <cstddef>
#include <vector>

#include "tandem/schedule/policy.hpp"

namespace tandem::schedule {

class group_gating {
 public:
  virtual ~group_gating() = default;

  /// Allocation ordinals within an iteration (ascending, each > 0) at which `job` must ask
  /// may_enter_group before going on; empty: no gating inside this iteration. Read by the driver
  /// at each iteration start; group k begins at boundaries[k - 1].
  [[nodiscard]] virtual std::vector<std::size_t> group_boundaries(job_id job) const = 0;
  /// The job finished group `group` of its iteration and waits at the next boundary.
  virtual void on_group_end(job_id job, std::size_t group, double now_s) = 0;
  /// May `job` go on into group `group` (>= 1) of its iteration at `now_s`?
  [[nodiscard]] virtual decision may_enter_group(job_id job, std::size_t group, double now_s) = 0;
  /// The driver let the job into group `group` (after a start verdict).
  virtual void on_group_start(job_id job, std::size_t group, double now_s) = 0;

  /// Whether iteration reports should carry every allocation and free (iteration_report::
  /// memory): a cost the driver pays only for the policy that cuts groups from them.
  [[nodiscard]] virtual bool wants_memory_events() const = 0;
};

}  // namespace tandem::schedule
