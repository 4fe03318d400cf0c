#pragma once
// Waterwave's node groups (§4.3-§4.4) over an eager job: an iteration cut into consecutive
// groups of roughly equal net allocation (the split size). Eager libtorch has no graph, so
// groups are defined over the iteration's observed memory events, which repeat every
// iteration: a group starts at an allocation, and a running job is matched to its groups by
// counting its allocations since the iteration began (see docs/ARCHITECTURE.md, "NodeGroup").
//
// Groups before the iteration's live peak accumulate allocation until their net reaches the
// split size; groups after it accumulate frees until their net reaches minus the split size. A
// group is allocating (ANG) when its net is positive, freeing (DNG) otherwise. Recurrent models
// unroll their cell into a run of identical event patterns (a cycle in the graph Waterwave
// partitions); a cut inside such a run falls only where a repetition begins, so every group
// holds whole time steps.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tandem/schedule/usage_curve.hpp"

namespace tandem::schedule {

enum class group_kind { allocating, freeing };

struct node_group {
  std::size_t first_event = 0;       ///< index of its first memory event
  std::size_t event_count = 0;       ///< at least 1
  std::size_t first_allocation = 0;  ///< allocations before it in the iteration: its boundary
  std::int64_t net_bytes = 0;        ///< live bytes allocated minus freed by the group
  std::size_t held_at_start = 0;     ///< regions the job held when the group began
  std::size_t held_peak = 0;         ///< the most regions held during the group (>= start)
  std::size_t held_at_end = 0;       ///< regions held after its last event
  group_kind kind = group_kind::allocating;
  friend bool operator==(const node_group&, const node_group&) = default;
};

/// A run of identical event patterns (a recurrent cell unrolled): `period` events repeated
/// `repetitions` times from `first_event` on.
struct event_cycle {
  std::size_t first_event = 0;
  std::size_t period = 0;
  std::size_t repetitions = 0;
  friend bool operator==(const event_cycle&, const event_cycle&) = default;
};

struct partition_options {
  /// Net bytes a group aims at; 0 chooses it: the largest of the live peak's rise divided by
  /// `groups_per_phase` and the largest single allocation (one allocation never straddles
  /// groups, so a smaller split cannot be met).
  std::size_t split_bytes = 0;
  std::size_t groups_per_phase = 4;
  /// Cycles shorter than this many repetitions are not treated as cycles.
  std::size_t min_repetitions = 3;
};

struct iteration_partition {
  std::vector<node_group> groups;  ///< consecutive, covering every event, in order
  std::vector<event_cycle> cycles;
  std::size_t split_bytes = 0;    ///< the split used (chosen or given)
  std::size_t peak_event = 0;     ///< index of the event after which live bytes peak
  std::size_t held_at_start = 0;  ///< regions held when the iteration began
  std::size_t allocations = 0;    ///< allocations in the iteration
};

/// Cuts an iteration into node groups. `held_at_start`: the regions held before the first
/// event. An empty iteration gives no groups. Throws config_error when groups_per_phase is 0.
[[nodiscard]] iteration_partition partition_iteration(std::span<const memory_event> events,
                                                      std::size_t held_at_start,
                                                      const partition_options& options = {});

/// The runs of repeated event patterns (period 2 .. 256 events, at least min_repetitions
/// repetitions), leftmost first and not overlapping; what partition_iteration keeps whole.
/// Throws config_error when min_repetitions < 2.
[[nodiscard]] std::vector<event_cycle> find_cycles(std::span<const memory_event> events,
                                                   std::size_t min_repetitions = 3);

}  // namespace tandem::schedule
