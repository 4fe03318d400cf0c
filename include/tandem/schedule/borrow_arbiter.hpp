#pragma once
// An optional capability of a policy: it judges every region borrow of the jobs it schedules,
// not only the starts of their iterations, so that iterations it lets run side by side within
// the budget can always finish (scrooge; iteration_claims.hpp). A driver discovers it once
// (capabilities_of, policy_capabilities.hpp) and then routes every borrow and return through
// it: the runtime from the pool (memory::borrow_gate), the simulator at each step of a job's
// region curve. A refused borrow makes the job wait, mid-iteration, while others_will_move
// says another iteration will return regions or be let through; when none will, the driver
// picks the iteration that lets go (policy_driver.hpp, "Memory waits").
//
// Thread safety: unlike the policy's other calls, these may come from any thread at any time
// (the runtime calls them under a job's pool lock); an implementation locks, and never calls
// into the driver or the pool.

#include <cstddef>

#include "tandem/memory/trace.hpp"

namespace tandem::schedule {

class borrow_arbiter {
 public:
  virtual ~borrow_arbiter() = default;
  /// `job` is about to borrow `bytes` of regions: true reserves them, false makes it wait.
  [[nodiscard]] virtual bool try_reserve(memory::job_id job, std::size_t bytes) = 0;
  /// A reservation the driver could not turn into regions after all.
  virtual void cancel(memory::job_id job, std::size_t bytes) = 0;
  /// `job` returned `bytes` of regions.
  virtual void returned(memory::job_id job, std::size_t bytes) = 0;
  /// After a refusal of `job`: whether another running iteration will return regions or be let
  /// through, so that waiting helps. False: every running iteration is stuck.
  [[nodiscard]] virtual bool others_will_move(memory::job_id job) = 0;
};

}  // namespace tandem::schedule
