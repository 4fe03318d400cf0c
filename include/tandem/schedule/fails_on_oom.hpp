#pragma once
// An optional capability that marks a baseline whose point is to show what happens without
// memory scheduling (spatial sharing, static partitions): a region borrow beyond the budget, or
// beyond the job's partition, fails the job with an out-of-memory error. Under every other
// policy such a borrow waits, mid-iteration, while waiting can help (policy_driver::
// worth_waiting_for_memory): a lowered budget or a wrong prediction costs time, never a job.

namespace tandem::schedule {

class fails_on_oom {
 public:
  virtual ~fails_on_oom() = default;
};

}  // namespace tandem::schedule
