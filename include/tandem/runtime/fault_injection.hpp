#pragma once
// Faults injected into a session's jobs on purpose, to prove that a job's failure stays its own:
// the isolation tests make a job fail at a chosen allocation (while its model is built, in its
// forward or backward pass, in its optimizer step) and check that every other job trains as it
// would alone; or make an iteration restart and check that its job, too, trains as alone. A job's
// allocations are counted from its first, setup included. The simulator takes the same plan
// (sim_options::faults).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tandem::runtime {

struct injected_fault {
  enum class kind {
    out_of_memory,  ///< the allocation is refused as the pool refuses one (out_of_memory_error)
    error,          ///< an exception, as a failing operator or a bug in the job's code throws
    /// Not a failure: the iteration lets go at this allocation, or at the first after it where
    /// it can (its forward or backward pass), as when every running iteration waits for another
    /// (schedule/policy_driver.hpp, "Memory waits"); it runs again and the job goes on.
    restart,
  };
  std::string job;             ///< the job's name in the workload
  std::size_t allocation = 0;  ///< fails the job's allocation with this ordinal (0: its first)
  kind what = kind::out_of_memory;
};

using fault_plan = std::vector<injected_fault>;

/// The fault planned for `job`, if any (the first one naming it).
[[nodiscard]] std::optional<injected_fault> fault_for(const fault_plan& plan,
                                                      const std::string& job);

}  // namespace tandem::runtime
