#pragma once
// Waterwave's CounterBarrier (§4.3, Fig. 6): separates consecutive steps of node groups. A step
// opens with its members (the jobs whose groups run in it); each member arrives when its group
// is done; the next step may begin once every member has arrived. Members can be removed on the
// fly (a job that leaves mid-step), so jobs come and go without a deadlock. Waterwave counts
// with atomics inside the executor; here the policy driver already serializes every call, so a
// plain count does.

#include <cstddef>
#include <set>
#include <vector>

#include "tandem/memory/trace.hpp"

namespace tandem::schedule {

class counter_barrier {
 public:
  using job_id = memory::job_id;

  /// Starts a step with these members. Only when the previous step is over (is_open()).
  void open(const std::vector<job_id>& members);
  /// `job` finished its group; true when that completed the step. Not a member: false.
  bool arrive(job_id job);
  /// `job` left (departed); the step no longer waits for it. True when that completed the step.
  bool remove(job_id job);

  /// No step is running: the next may begin.
  [[nodiscard]] bool is_open() const { return pending_.empty(); }
  [[nodiscard]] bool is_member(job_id job) const { return pending_.contains(job); }
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }
  /// Steps opened so far.
  [[nodiscard]] std::size_t steps() const { return steps_; }

 private:
  std::set<job_id> pending_;
  std::size_t steps_ = 0;
};

}  // namespace tandem::schedule
