#include "tandem/schedule/node_groups.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "tandem/common/error.hpp"

namespace tandem::schedule {

namespace {

constexpr std::size_t shortest_period = 2;
constexpr std::size_t longest_period = 256;

/// Whether a group may begin at each event: only at an allocation (groups are matched to a
/// running job by counting its allocations), never at the first event (group 0 begins there),
/// and inside a cycle only where a repetition begins, so that groups hold whole time steps.
std::vector<bool> allowed_cuts(std::span<const memory_event> events,
                               const std::vector<event_cycle>& cycles) {
  std::vector<bool> allowed(events.size());
  for (std::size_t j = 1; j < events.size(); ++j) allowed[j] = events[j].bytes > 0;
  for (const auto& cycle : cycles) {
    const std::size_t end = cycle.first_event + cycle.period * cycle.repetitions;
    for (std::size_t j = cycle.first_event + 1; j < end; ++j) {
      if ((j - cycle.first_event) % cycle.period != 0) allowed[j] = false;
    }
  }
  return allowed;
}

/// The first event of every group. Forward groups (up to the live peak) end at the first
/// allowed cut once their net reaches `split`; backward groups begin at the first allowed cut
/// after the peak and end at the first allowed cut once their net reaches -`split`.
std::vector<std::size_t> group_starts(std::span<const memory_event> events, std::size_t peak_event,
                                      std::int64_t split, const std::vector<bool>& cut_allowed) {
  std::vector<std::size_t> starts{0};
  // A phase's last group netting under half the split is not worth a boundary of its own.
  const auto merge_small_remainder = [&](std::size_t groups_in_phase, std::int64_t net) {
    if (groups_in_phase > 1 && 2 * std::abs(net) < split) starts.pop_back();
  };

  std::int64_t net = 0;
  for (std::size_t j = 0; j <= peak_event; ++j) {
    if (cut_allowed[j] && net >= split) {
      starts.push_back(j);
      net = 0;
    }
    net += events[j].bytes;
  }
  // The frees between the peak and the first backward cut belong to the last forward group
  // too: they decide whether it is worth a boundary of its own.
  std::size_t backward_start = peak_event + 1;
  while (backward_start < events.size() && !cut_allowed[backward_start]) {
    net += events[backward_start].bytes;
    ++backward_start;
  }
  merge_small_remainder(starts.size(), net);
  if (backward_start == events.size()) return starts;
  const std::size_t forward_groups = starts.size();
  starts.push_back(backward_start);
  net = 0;
  for (std::size_t j = backward_start; j < events.size(); ++j) {
    if (cut_allowed[j] && net <= -split) {
      starts.push_back(j);
      net = 0;
    }
    net += events[j].bytes;
  }
  merge_small_remainder(starts.size() - forward_groups, net);
  return starts;
}

}  // namespace

std::vector<event_cycle> find_cycles(std::span<const memory_event> events,
                                     std::size_t min_repetitions) {
  TANDEM_EXPECTS(min_repetitions >= 2, config_error,
                 "node groups: min_repetitions must be at least 2 (a pattern seen once does not "
                 "repeat), not " +
                     std::to_string(min_repetitions));
  const std::size_t n = events.size();
  // equal_run[i]: how many events from i on have the bytes of event i. A pattern of equal
  // values repeats with period 1, which is a run of like tensors rather than a cycle.
  std::vector<std::size_t> equal_run(n);
  for (std::size_t i = n; i-- > 0;) {
    equal_run[i] = i + 1 < n && events[i + 1].bytes == events[i].bytes ? equal_run[i + 1] + 1 : 1;
  }
  // mismatch[p]: the first position j at or after the scan where events j and j + p differ (or
  // j + p == n). The scan only moves right, so each of these only moves right: O(n) per period.
  std::vector<std::size_t> mismatch(longest_period + 1, 0);

  std::vector<event_cycle> cycles;
  std::size_t i = 0;
  while (i < n) {
    bool found = false;
    // Smallest period first: a pattern made of a shorter one repeats with the shorter one,
    // at least twice as often, so it is found first.
    for (std::size_t period = shortest_period;
         period <= longest_period && period * min_repetitions <= n - i; ++period) {
      if (equal_run[i] >= period) continue;
      std::size_t& j = mismatch[period];
      j = std::max(j, i);
      while (j + period < n && events[j].bytes == events[j + period].bytes) ++j;
      // Events i .. j + period - 1 repeat with this period.
      const std::size_t repetitions = (j - i + period) / period;
      if (repetitions >= min_repetitions) {
        cycles.push_back({i, period, repetitions});
        i += period * repetitions;
        found = true;
        break;
      }
    }
    if (!found) ++i;
  }
  return cycles;
}

iteration_partition partition_iteration(std::span<const memory_event> events,
                                        std::size_t held_at_start,
                                        const partition_options& options) {
  TANDEM_EXPECTS(options.groups_per_phase > 0, config_error,
                 "node groups: groups_per_phase must be at least 1 (the number of groups the "
                 "live peak's rise is cut into when split_bytes is 0)");
  iteration_partition result;
  result.held_at_start = held_at_start;
  if (events.empty()) return result;

  // Live bytes are counted from the iteration's start, so the rise is never below 0.
  std::int64_t live = 0;
  std::int64_t live_peak = 0;
  std::size_t largest_allocation = 0;
  for (std::size_t j = 0; j < events.size(); ++j) {
    live += events[j].bytes;
    if (j == 0 || live > live_peak) {
      live_peak = live;
      result.peak_event = j;
    }
    if (events[j].bytes > 0) {
      ++result.allocations;
      largest_allocation = std::max(largest_allocation, static_cast<std::size_t>(events[j].bytes));
    }
  }
  if (options.split_bytes != 0) {
    result.split_bytes = options.split_bytes;
  } else {
    const auto rise = static_cast<std::size_t>(std::max<std::int64_t>(live_peak, 0));
    const std::size_t share = (rise + options.groups_per_phase - 1) / options.groups_per_phase;
    result.split_bytes = std::max({share, largest_allocation, std::size_t{1}});
  }

  result.cycles = find_cycles(events, options.min_repetitions);
  const std::vector<std::size_t> starts =
      group_starts(events, result.peak_event, static_cast<std::int64_t>(result.split_bytes),
                   allowed_cuts(events, result.cycles));

  std::size_t allocations_before = 0;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::size_t first = starts[k];
    const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : events.size();
    node_group group;
    group.first_event = first;
    group.event_count = end - first;
    group.first_allocation = allocations_before;
    group.held_at_start = first == 0 ? held_at_start : events[first - 1].held_after;
    group.held_peak = group.held_at_start;
    for (std::size_t j = first; j < end; ++j) {
      group.net_bytes += events[j].bytes;
      group.held_peak = std::max(group.held_peak, events[j].held_after);
      if (events[j].bytes > 0) ++allocations_before;
    }
    group.held_at_end = events[end - 1].held_after;
    group.kind = group.net_bytes > 0 ? group_kind::allocating : group_kind::freeing;
    result.groups.push_back(group);
  }
  return result;
}

}  // namespace tandem::schedule
