// Node groups over an iteration's memory events: hand-made traces whose groups are worked out on
// paper, cycle detection against a brute-force reference, and a randomized check of the
// partition's invariants.

#include "tandem/schedule/node_groups.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

using tandem::schedule::event_cycle;
using tandem::schedule::find_cycles;
using tandem::schedule::group_kind;
using tandem::schedule::iteration_partition;
using tandem::schedule::memory_event;
using tandem::schedule::node_group;
using tandem::schedule::partition_iteration;
using tandem::schedule::partition_options;

namespace {

constexpr std::int64_t mib = static_cast<std::int64_t>(tandem::MiB);
constexpr std::size_t region = 2 * tandem::MiB;
constexpr std::size_t held_at_start = 8 * tandem::MiB;
constexpr group_kind ang = group_kind::allocating;
constexpr group_kind dng = group_kind::freeing;

/// Events of the given sizes in bytes; the job starts with `held_at_start` live bytes and holds
/// its live bytes rounded up to 2 MiB regions.
std::vector<memory_event> events_of_bytes(const std::vector<std::int64_t>& bytes) {
  std::vector<memory_event> events;
  auto live = static_cast<std::int64_t>(held_at_start);
  for (const std::int64_t size : bytes) {
    live += size;
    events.push_back(
        {size,
         tandem::align_up(static_cast<std::size_t>(std::max<std::int64_t>(live, 0)), region)});
  }
  return events;
}

/// `pattern`, `times` times over: an unrolled loop.
std::vector<std::int64_t> repeated(std::initializer_list<std::int64_t> pattern, std::size_t times) {
  std::vector<std::int64_t> sizes;
  for (std::size_t k = 0; k < times; ++k) sizes.insert(sizes.end(), pattern);
  return sizes;
}

/// Events of the given sizes in MiB: allocations > 0, frees < 0.
std::vector<memory_event> trace(const std::vector<std::int64_t>& sizes_mib) {
  std::vector<std::int64_t> bytes;
  for (const std::int64_t size : sizes_mib) bytes.push_back(size * mib);
  return events_of_bytes(bytes);
}

partition_options split_mib(std::int64_t split) {
  return {.split_bytes = static_cast<std::size_t>(split * mib)};
}

std::vector<std::size_t> first_events(const iteration_partition& partition) {
  std::vector<std::size_t> firsts;
  for (const auto& group : partition.groups) firsts.push_back(group.first_event);
  return firsts;
}

std::vector<std::int64_t> nets_mib(const iteration_partition& partition) {
  std::vector<std::int64_t> nets;
  for (const auto& group : partition.groups) nets.push_back(group.net_bytes / mib);
  return nets;
}

std::vector<group_kind> kinds(const iteration_partition& partition) {
  std::vector<group_kind> result;
  for (const auto& group : partition.groups) result.push_back(group.kind);
  return result;
}

std::vector<std::size_t> first_allocations(const iteration_partition& partition) {
  std::vector<std::size_t> result;
  for (const auto& group : partition.groups) result.push_back(group.first_allocation);
  return result;
}

/// Checks what every partition must satisfy, whatever the trace.
void expect_valid(std::span<const memory_event> events, std::size_t held_before,
                  const partition_options& options, const iteration_partition& partition) {
  ASSERT_EQ(partition.held_at_start, held_before);
  if (events.empty()) {
    EXPECT_TRUE(partition.groups.empty());
    return;
  }
  ASSERT_FALSE(partition.groups.empty());

  std::int64_t live = 0;
  std::int64_t live_peak = 0;
  std::size_t peak_event = 0;
  std::size_t allocations = 0;
  std::size_t largest_allocation = 0;
  for (std::size_t j = 0; j < events.size(); ++j) {
    live += events[j].bytes;
    if (j == 0 || live > live_peak) {
      live_peak = live;
      peak_event = j;
    }
    if (events[j].bytes > 0) {
      ++allocations;
      largest_allocation = std::max(largest_allocation, static_cast<std::size_t>(events[j].bytes));
    }
  }
  EXPECT_EQ(partition.peak_event, peak_event);
  EXPECT_EQ(partition.allocations, allocations);
  if (options.split_bytes != 0) {
    EXPECT_EQ(partition.split_bytes, options.split_bytes);
  } else {
    EXPECT_GE(partition.split_bytes, largest_allocation);
    EXPECT_GE(partition.split_bytes * options.groups_per_phase,
              static_cast<std::size_t>(std::max<std::int64_t>(live_peak, 0)));
  }
  const auto split = static_cast<std::int64_t>(partition.split_bytes);

  std::size_t next_event = 0;
  std::size_t allocations_before = 0;
  std::int64_t total_net = 0;
  for (std::size_t k = 0; k < partition.groups.size(); ++k) {
    SCOPED_TRACE("group " + std::to_string(k));
    const node_group& group = partition.groups[k];
    ASSERT_EQ(group.first_event, next_event) << "groups must cover every event once, in order";
    ASSERT_GE(group.event_count, 1u);
    const std::size_t end = group.first_event + group.event_count;
    ASSERT_LE(end, events.size());
    if (k > 0) {
      EXPECT_GT(events[group.first_event].bytes, 0) << "a group begins at an allocation";
    }
    EXPECT_EQ(group.first_allocation, allocations_before);
    EXPECT_EQ(group.held_at_start,
              group.first_event == 0 ? held_before : events[group.first_event - 1].held_after);
    EXPECT_EQ(group.held_at_end, events[end - 1].held_after);

    std::int64_t net = 0;
    std::size_t held_peak = group.held_at_start;
    // No boundary was skipped: at every allowed cut inside a group that is not the last of its
    // phase, the group had not reached the split yet.
    const bool forward = group.first_event <= peak_event;
    const bool last_of_phase = k + 1 == partition.groups.size() ||
                               (forward && partition.groups[k + 1].first_event > peak_event);
    for (std::size_t j = group.first_event; j < end; ++j) {
      const bool cut_allowed =
          j > group.first_event && events[j].bytes > 0 &&
          std::none_of(partition.cycles.begin(), partition.cycles.end(),
                       [&](const event_cycle& cycle) {
                         return j > cycle.first_event &&
                                j < cycle.first_event + cycle.period * cycle.repetitions &&
                                (j - cycle.first_event) % cycle.period != 0;
                       });
      if (cut_allowed && !last_of_phase) {
        EXPECT_TRUE(forward ? net < split : net > -split) << "missed a cut before event " << j;
      }
      net += events[j].bytes;
      held_peak = std::max(held_peak, events[j].held_after);
      if (events[j].bytes > 0) ++allocations_before;
    }
    EXPECT_EQ(group.net_bytes, net);
    EXPECT_EQ(group.kind, net > 0 ? ang : dng);
    EXPECT_EQ(group.held_peak, held_peak);
    EXPECT_GE(group.held_peak, group.held_at_start);
    EXPECT_GE(group.held_peak, group.held_at_end);
    if (!last_of_phase) {
      if (forward) {
        EXPECT_GE(group.net_bytes, split) << "a forward group ends once it nets the split";
      } else {
        EXPECT_LE(group.net_bytes, -split) << "a backward group ends once it frees the split";
      }
    }
    for (const event_cycle& cycle : partition.cycles) {
      const std::size_t cycle_end = cycle.first_event + cycle.period * cycle.repetitions;
      if (group.first_event > cycle.first_event && group.first_event < cycle_end) {
        EXPECT_EQ((group.first_event - cycle.first_event) % cycle.period, 0u)
            << "a boundary inside a cycle falls where a repetition begins";
      }
    }
    total_net += net;
    next_event = end;
  }
  EXPECT_EQ(next_event, events.size());
  EXPECT_EQ(total_net, live);
}

/// find_cycles as the header states it, one repetition at a time.
std::vector<event_cycle> cycles_by_brute_force(std::span<const memory_event> events,
                                               std::size_t min_repetitions) {
  const auto same = [&](std::size_t a, std::size_t b, std::size_t length) {
    for (std::size_t k = 0; k < length; ++k) {
      if (events[a + k].bytes != events[b + k].bytes) return false;
    }
    return true;
  };
  std::vector<event_cycle> cycles;
  std::size_t i = 0;
  while (i < events.size()) {
    std::size_t next = i + 1;
    for (std::size_t period = 2; period <= 256 && i + period <= events.size(); ++period) {
      const bool all_equal =
          std::all_of(events.begin() + static_cast<std::ptrdiff_t>(i),
                      events.begin() + static_cast<std::ptrdiff_t>(i + period),
                      [&](const memory_event& e) { return e.bytes == events[i].bytes; });
      if (all_equal) continue;
      std::size_t repetitions = 1;
      while (i + (repetitions + 1) * period <= events.size() &&
             same(i, i + repetitions * period, period)) {
        ++repetitions;
      }
      if (repetitions >= min_repetitions) {
        cycles.push_back({i, period, repetitions});
        next = i + period * repetitions;
        break;
      }
    }
    i = next;
  }
  return cycles;
}

/// A random iteration: a forward that mostly allocates, a backward that mostly frees, with
/// runs of equal sizes and unrolled patterns mixed in, sizes in KiB.
std::vector<memory_event> random_iteration(std::mt19937& random) {
  std::uniform_int_distribution<int> length(0, 400);
  std::uniform_int_distribution<std::int64_t> size_kib(1, 32 * 1024);
  std::uniform_int_distribution<int> percent(0, 99);
  const int events = length(random);
  std::vector<std::int64_t> bytes;
  while (static_cast<int>(bytes.size()) < events) {
    const bool backward = static_cast<int>(bytes.size()) > events / 2;
    const int allocation_percent = backward ? 35 : 70;
    const auto next_size = [&] {
      const std::int64_t size = size_kib(random) * static_cast<std::int64_t>(tandem::KiB);
      return percent(random) < allocation_percent ? size : -size;
    };
    const int shape = percent(random);
    if (shape < 10) {
      bytes.insert(bytes.end(), static_cast<std::size_t>(2 + percent(random) % 8), next_size());
    } else if (shape < 20) {
      std::vector<std::int64_t> pattern(static_cast<std::size_t>(2 + percent(random) % 5));
      for (auto& size : pattern) size = next_size();
      for (int repetition = 2 + percent(random) % 6; repetition > 0; --repetition) {
        bytes.insert(bytes.end(), pattern.begin(), pattern.end());
      }
    } else {
      bytes.push_back(next_size());
    }
  }
  return events_of_bytes(bytes);
}

}  // namespace

TEST(NodeGroups, CnnTraceCutsIntoAllocatingThenFreeingGroups) {
  // Forward: 8 activations of 10 MiB. Backward: the last activation freed, then 7 layers that
  // each allocate a 5 MiB gradient and free 15 MiB (an activation and the previous gradient).
  std::vector<std::int64_t> sizes = repeated({10}, 8);
  sizes.push_back(-10);
  const std::vector<std::int64_t> layers = repeated({5, -15}, 7);
  sizes.insert(sizes.end(), layers.begin(), layers.end());
  const auto events = trace(sizes);
  const auto partition = partition_iteration(events, held_at_start, split_mib(20));
  expect_valid(events, held_at_start, split_mib(20), partition);

  EXPECT_EQ(partition.peak_event, 7u);
  EXPECT_EQ(partition.allocations, 15u);
  EXPECT_EQ(partition.split_bytes, 20 * tandem::MiB);
  // The frees after the peak stay in the last forward group up to the first gradient; the
  // backward ends with -10 MiB, exactly half the split, which keeps its own group.
  EXPECT_EQ(first_events(partition), (std::vector<std::size_t>{0, 2, 4, 6, 9, 13, 17, 21}));
  EXPECT_EQ(nets_mib(partition), (std::vector<std::int64_t>{20, 20, 20, 10, -20, -20, -20, -10}));
  EXPECT_EQ(kinds(partition), (std::vector<group_kind>{ang, ang, ang, ang, dng, dng, dng, dng}));
  EXPECT_EQ(first_allocations(partition), (std::vector<std::size_t>{0, 2, 4, 6, 8, 10, 12, 14}));
  // Held (MiB) = 8 + live rounded up to 2 MiB: 18 28 38 48 58 68 78 88 | 78 | 84 68 74 58 ...
  const std::vector<std::size_t> starts{8, 28, 48, 68, 78, 58, 38, 18};
  const std::vector<std::size_t> peaks{28, 48, 68, 88, 84, 64, 44, 24};
  const std::vector<std::size_t> ends{28, 48, 68, 78, 58, 38, 18, 8};
  ASSERT_EQ(partition.groups.size(), 8u);
  for (std::size_t k = 0; k < 8; ++k) {
    SCOPED_TRACE("group " + std::to_string(k));
    EXPECT_EQ(partition.groups[k].held_at_start, starts[k] * tandem::MiB);
    EXPECT_EQ(partition.groups[k].held_peak, peaks[k] * tandem::MiB);
    EXPECT_EQ(partition.groups[k].held_at_end, ends[k] * tandem::MiB);
  }
  EXPECT_EQ(partition.cycles, (std::vector<event_cycle>{{9, 2, 7}}));
}

TEST(NodeGroups, BackwardWithoutAllocationsStaysInTheLastGroup) {
  // No allocation after the peak means no point where a running job could be stopped, so the
  // frees cannot open groups of their own.
  std::vector<std::int64_t> sizes = repeated({10}, 8);
  const std::vector<std::int64_t> frees = repeated({-10}, 8);
  sizes.insert(sizes.end(), frees.begin(), frees.end());
  const auto events = trace(sizes);
  const auto partition = partition_iteration(events, held_at_start, split_mib(20));
  expect_valid(events, held_at_start, split_mib(20), partition);
  EXPECT_EQ(first_events(partition), (std::vector<std::size_t>{0, 2, 4, 6}));
  EXPECT_EQ(nets_mib(partition), (std::vector<std::int64_t>{20, 20, 20, -60}));
  EXPECT_EQ(kinds(partition), (std::vector<group_kind>{ang, ang, ang, dng}));
}

TEST(NodeGroups, AutomaticSplitIsTheRiseOverGroupsPerPhase) {
  // Rise 100 MiB over 4 groups: 25 MiB. Forward 30 + 30 + a 10 MiB remainder merged into the
  // third; the -20 MiB free before the first gradient stays in it too.
  std::vector<std::int64_t> sizes = repeated({10}, 10);
  sizes.insert(sizes.end(), {-20, 4, -44, 4, -44});
  const auto events = trace(sizes);
  const auto partition = partition_iteration(events, held_at_start);
  expect_valid(events, held_at_start, {}, partition);
  EXPECT_EQ(partition.split_bytes, 25 * tandem::MiB);
  EXPECT_EQ(first_events(partition), (std::vector<std::size_t>{0, 3, 6, 11, 13}));
  EXPECT_EQ(nets_mib(partition), (std::vector<std::int64_t>{30, 30, 20, -40, -40}));

  EXPECT_EQ(partition_iteration(events, held_at_start, {.groups_per_phase = 2}).split_bytes,
            50 * tandem::MiB);
  // A rise of 10 bytes in 4 groups rounds up to 3 bytes, so 4 groups cover it.
  const auto bytes = events_of_bytes(std::vector<std::int64_t>(10, 1));
  EXPECT_EQ(partition_iteration(bytes, held_at_start).split_bytes, 3u);
}

TEST(NodeGroups, LargeAllocationFormsItsOwnGroupAndBoundsTheAutomaticSplit) {
  const auto events = trace({5, 5, 40, 5, 5});
  const auto given = partition_iteration(events, held_at_start, split_mib(10));
  expect_valid(events, held_at_start, split_mib(10), given);
  EXPECT_EQ(first_events(given), (std::vector<std::size_t>{0, 2, 3}));
  EXPECT_EQ(nets_mib(given), (std::vector<std::int64_t>{10, 40, 10}));

  // The rise over 4 is 15 MiB, below the 40 MiB allocation, which no group can split.
  const auto chosen = partition_iteration(events, held_at_start);
  expect_valid(events, held_at_start, {}, chosen);
  EXPECT_EQ(chosen.split_bytes, 40 * tandem::MiB);
  EXPECT_EQ(first_events(chosen), (std::vector<std::size_t>{0}));
}

TEST(NodeGroups, SmallRemainderMergesIntoThePreviousGroupOfItsPhase) {
  // Forward 10 10 | 10 10 | 5: the 5 MiB remainder is under half the split. Backward
  // +2 -22 | +2 -22 | +1 -1: the last group nets 0.
  const auto events = trace({10, 10, 10, 10, 5, -5, 2, -22, 2, -22, 1, -1});
  const auto partition = partition_iteration(events, held_at_start, split_mib(20));
  expect_valid(events, held_at_start, split_mib(20), partition);
  EXPECT_EQ(partition.peak_event, 4u);
  EXPECT_EQ(first_events(partition), (std::vector<std::size_t>{0, 2, 6, 8}));
  EXPECT_EQ(nets_mib(partition), (std::vector<std::int64_t>{20, 20, -20, -20}));
  EXPECT_EQ(kinds(partition), (std::vector<group_kind>{ang, ang, dng, dng}));
}

TEST(NodeGroups, RecurrentTraceIsCutOnlyBetweenTimeSteps) {
  // 5 unrolled time steps of [+3, +1, -1], then 5 backward steps of [+2, -2, -3].
  std::vector<std::int64_t> sizes = repeated({3, 1, -1}, 5);
  const std::vector<std::int64_t> backward = repeated({2, -2, -3}, 5);
  sizes.insert(sizes.end(), backward.begin(), backward.end());
  const auto events = trace(sizes);
  EXPECT_EQ(find_cycles(events), (std::vector<event_cycle>{{0, 3, 5}, {15, 3, 5}}));

  const auto partition = partition_iteration(events, held_at_start);
  expect_valid(events, held_at_start, {}, partition);
  // Live peaks at 17 MiB after the first backward allocation (event 15): the split is a
  // quarter of that, above the largest allocation (3 MiB).
  EXPECT_EQ(partition.peak_event, 15u);
  EXPECT_EQ(partition.split_bytes, 17 * tandem::MiB / 4);
  EXPECT_EQ(partition.cycles, (std::vector<event_cycle>{{0, 3, 5}, {15, 3, 5}}));
  // The +1 MiB allocations inside a step are never cut before, so each forward group holds two
  // whole steps. The last forward steps and the first backward step (up to the first backward
  // cut) net 0 MiB: not worth a boundary, they join the group before.
  EXPECT_EQ(first_events(partition), (std::vector<std::size_t>{0, 6, 18, 24}));
  EXPECT_EQ(nets_mib(partition), (std::vector<std::int64_t>{6, 6, -6, -6}));
  EXPECT_EQ(kinds(partition), (std::vector<group_kind>{ang, ang, dng, dng}));
  for (const auto& group : partition.groups) EXPECT_EQ(group.first_event % 3, 0u);
}

TEST(NodeGroups, FindCyclesPrefersTheShortestPeriodAndSkipsRunsOfEqualEvents) {
  EXPECT_EQ(find_cycles(trace({1, 2, 1, 2, 1, 2, 1, 2})), (std::vector<event_cycle>{{0, 2, 4}}));
  EXPECT_TRUE(find_cycles(trace({5, 5, 5, 5, 5, 5, 5})).empty());
  EXPECT_EQ(find_cycles(trace({1, 1, 2, 1, 1, 2, 1, 1, 2})), (std::vector<event_cycle>{{0, 3, 3}}));
  // Noise, then a cycle that a shifted start would also match: the leftmost start wins.
  EXPECT_EQ(find_cycles(trace({9, 4, 7, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 8})),
            (std::vector<event_cycle>{{3, 3, 3}}));
  EXPECT_TRUE(find_cycles(trace({1, 2, 3, 1, 2, 3, 1, 2, 3}), 4).empty());
  EXPECT_EQ(find_cycles(trace({1, 2, 3, 1, 2, 3}), 2), (std::vector<event_cycle>{{0, 3, 2}}));
}

TEST(NodeGroups, GradientsAllocatedAfterThePeakStillFormFreeingGroups) {
  // A free before the first allocation (last iteration's leftover) stays in group 0; the
  // backward allocates 3 and 2 MiB gradients while freeing more.
  const auto events = trace({-4, 10, 10, 10, 10, -5, 3, -23, 2, -13});
  const auto partition = partition_iteration(events, held_at_start, split_mib(20));
  expect_valid(events, held_at_start, split_mib(20), partition);
  EXPECT_EQ(partition.peak_event, 4u);
  // The group the peak's allocation opens nets only 5 MiB once the free before the first
  // backward cut is counted: under half the split, so it joins group 0.
  EXPECT_EQ(first_events(partition), (std::vector<std::size_t>{0, 6, 8}));
  EXPECT_EQ(nets_mib(partition), (std::vector<std::int64_t>{31, -20, -11}));
  EXPECT_EQ(kinds(partition), (std::vector<group_kind>{ang, dng, dng}));
  EXPECT_EQ(first_allocations(partition), (std::vector<std::size_t>{0, 4, 5}));
  // Group 0 starts at the iteration's 8 MiB, drops to 4 MiB, then rises to 44 MiB.
  EXPECT_EQ(partition.groups[0].held_at_start, 8 * tandem::MiB);
  EXPECT_EQ(partition.groups[0].held_peak, 44 * tandem::MiB);
}

TEST(NodeGroups, PeakIsTheFirstEventWithTheMostLiveBytes) {
  // Live: 10 20 15 20 0. The second 20 MiB belongs to the backward, whose +5 MiB opens a group.
  const auto events = trace({10, 10, -5, 5, -20});
  const auto partition = partition_iteration(events, held_at_start, split_mib(5));
  expect_valid(events, held_at_start, split_mib(5), partition);
  EXPECT_EQ(partition.peak_event, 1u);
  EXPECT_EQ(first_events(partition), (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_EQ(nets_mib(partition), (std::vector<std::int64_t>{10, 5, -15}));
}

TEST(NodeGroups, GroupsCoverEveryEventOnceInOrder) {
  const std::vector<std::vector<memory_event>> traces{
      trace({5}),
      trace({-5}),
      trace({5, 5, 5, 5, 5, 5}),
      trace({-3, -3, -3}),
      trace({1, -1}),
      trace({8, -2, -2, -2, -2}),
      trace({-6, 2, 2, 2}),
      trace({3, -1, 3, -1, 3, -1, 3, -1}),
  };
  for (const auto& events : traces) {
    SCOPED_TRACE(::testing::Message() << events.size() << " events, first " << events[0].bytes);
    for (const std::int64_t split : {0, 1, 2, 100}) {
      const auto partition = partition_iteration(events, held_at_start, split_mib(split));
      expect_valid(events, held_at_start, split_mib(split), partition);
    }
  }
  // All allocations with split 1 MiB: a group per allocation.
  EXPECT_EQ(partition_iteration(trace({5, 5, 5}), held_at_start, split_mib(1)).groups.size(), 3u);
}

TEST(NodeGroups, RandomIterationsKeepTheInvariants) {
  std::uniform_int_distribution<std::size_t> split_mib_choice(0, 64);
  std::uniform_int_distribution<std::size_t> groups_per_phase(1, 6);
  std::uniform_int_distribution<std::size_t> min_repetitions(2, 4);
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 random(seed);
    const auto events = random_iteration(random);
    const std::size_t split = split_mib_choice(random);
    const partition_options options{.split_bytes = split % 2 == 0 ? 0 : split * tandem::MiB,
                                    .groups_per_phase = groups_per_phase(random),
                                    .min_repetitions = min_repetitions(random)};
    const auto partition = partition_iteration(events, held_at_start, options);
    expect_valid(events, held_at_start, options, partition);
    EXPECT_EQ(partition.cycles, cycles_by_brute_force(events, options.min_repetitions));
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(NodeGroups, LongTracePartitionsInLinearTime) {
  // 100k events with long runs of equal sizes and a long unrolled pattern, the inputs that a
  // quadratic cycle search would stall on.
  std::vector<std::int64_t> bytes(30'000, 4096);
  const std::vector<std::int64_t> steps = repeated({8192, 4096, -4096, 12288}, 5'000);
  bytes.insert(bytes.end(), steps.begin(), steps.end());
  std::mt19937 random(7);
  std::uniform_int_distribution<std::int64_t> size(1, 1 << 20);
  while (bytes.size() < 100'000) bytes.push_back(-size(random));
  const auto events = events_of_bytes(bytes);
  const auto partition = partition_iteration(events, held_at_start);
  expect_valid(events, held_at_start, {}, partition);
  EXPECT_EQ(partition.cycles.front(), (event_cycle{30'000, 4, 5'000}));
}

TEST(NodeGroups, ZeroGroupsPerPhaseIsRefused) {
  try {
    (void)partition_iteration(trace({1, -1}), held_at_start, {.groups_per_phase = 0});
    FAIL() << "groups_per_phase = 0 was accepted";
  } catch (const tandem::config_error& error) {
    EXPECT_NE(std::string(error.what()).find("groups_per_phase"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)find_cycles(trace({1, 2, 1, 2}), 1), tandem::config_error);
}

TEST(NodeGroups, EmptyIterationHasNoGroups) {
  const auto partition = partition_iteration({}, held_at_start, split_mib(10));
  EXPECT_TRUE(partition.groups.empty());
  EXPECT_TRUE(partition.cycles.empty());
  EXPECT_EQ(partition.split_bytes, 0u);
  EXPECT_EQ(partition.peak_event, 0u);
  EXPECT_EQ(partition.allocations, 0u);
  EXPECT_EQ(partition.held_at_start, held_at_start);
  EXPECT_TRUE(find_cycles({}).empty());
}
