#pragma once
// The optional capabilities a policy may have beside the core interface (policy.hpp), found
// once: a driver calls capabilities_of when it is built and keeps the result, so that no call
// on the hot path pays for a dynamic_cast, and a capability a policy lacks costs nothing.

#include "tandem/schedule/borrow_arbiter.hpp"
#include "tandem/schedule/chooses_footprint.hpp"
#include "tandem/schedule/explains_waiting.hpp"
#include "tandem/schedule/fails_on_oom.hpp"
#include "tandem/schedule/group_gating.hpp"
#include "tandem/schedule/memory_partitioning.hpp"
#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/reads_progress.hpp"
#include "tandem/schedule/reports_statistics.hpp"

namespace tandem::schedule {

/// The policy seen through each capability it has; nullptr where it has not. The pointers
/// point into the policy and live as long as it does.
struct policy_capabilities {
  group_gating* groups = nullptr;             ///< cuts iterations into gated groups (nodegroup)
  memory_partitioning* partitions = nullptr;  ///< per-job memory limits (static)
  explains_waiting* reasons = nullptr;        ///< says why a job waits (Salus)
  reports_statistics* statistics = nullptr;   ///< numbers for the results
  reads_progress* progress = nullptr;         ///< reads running jobs' progress (nodegroup)
  borrow_arbiter* borrows = nullptr;          ///< judges every region borrow (scrooge)
  fails_on_oom* oom_baseline = nullptr;       ///< fails on OOM, never waits (spatial, static)
  chooses_footprint* footprint = nullptr;     ///< runs iterations under plans (scrooge)
};

[[nodiscard]] policy_capabilities capabilities_of(policy& p);

}  // namespace tandem::schedule
