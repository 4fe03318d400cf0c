#include "tandem/memory/out_of_memory.hpp"

#include <algorithm>

#include "tandem/common/units.hpp"

namespace tandem::memory {

std::string oom_report::describe() const {
  std::string text = "out of memory: job '" + job_name + "' asked for " +
                     format_bytes(requested_bytes) + " (" + std::string(to_string(kind)) + ")";
  if (!cause.empty()) return text + ": " + cause;
  if (requested_bytes > capacity) {
    text += ", more than the pool's whole capacity of " + format_bytes(capacity) +
            "; raise the capacity or shrink the request (a smaller batch)";
    return text;
  }
  text += "\n  job:  " + format_bytes(job_live_bytes) + " live, " +
          format_bytes(job_reserved_bytes) + " in regions, " + format_bytes(job_unsynced_bytes) +
          " freed but still pending on the device";
  if (job_limit != 0) {
    text += ", partition of " + format_bytes(job_limit) +
            " (a static partition: a larger share or another policy would help)";
  }
  // What could be taken is what both the budget and the free regions leave; the regions alone
  // describe the capacity, most of which a tight budget puts out of reach.
  const auto budget_left = budget > pool_reserved_bytes ? budget - pool_reserved_bytes : 0;
  const auto free_bytes = std::min(budget_left, free_regions * region_size);
  const auto run_bytes = std::min(largest_free_run_bytes, free_bytes);
  text += "\n  pool: " + format_bytes(pool_reserved_bytes) + " of the " + format_bytes(budget) +
          " budget held by jobs (capacity " + format_bytes(capacity) + "); " +
          format_bytes(free_bytes) + " free within the budget in regions of " +
          format_bytes(region_size) + ", the largest contiguous run " + format_bytes(run_bytes);
  if (pool_reserved_bytes <= job_reserved_bytes) {
    // No other job held any of the budget: staggering jobs cannot help, shrinking this one can.
    text +=
        "\n  to fix: the job alone needs more than the budget; raise the budget (--budget), "
        "lower its batch size, or let a footprint planner cut its peak (planner = "
        "\"checkpoint\" in its [[job]], or --planner)";
  } else {
    text +=
        "\n  to fix: raise the budget (--budget), lower the batch size, or run fewer jobs at once "
        "(a policy that staggers their peaks)";
  }
  if (requested_bytes > region_size && run_bytes < requested_bytes &&
      free_bytes >= requested_bytes) {
    text += "; the free regions are not contiguous: a larger region size helps";
  }
  return text;
}

out_of_memory_error::out_of_memory_error(oom_report report)
    : error(report.describe()), report_(std::move(report)) {}

}  // namespace tandem::memory
