#pragma once
// Replays a trace (traces.hpp) against an allocator, and reports the results as benchmark
// counters. Shared by the DNN-trace and random-allocation benchmarks.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "allocators.hpp"
#include "traces.hpp"

namespace tandem::bench {

class trace_player {
 public:
  /// Allocates the trace's persistent blocks (kind persistent); the destructor frees them.
  trace_player(allocator& target, const trace& workload);
  ~trace_player();
  trace_player(const trace_player&) = delete;
  trace_player& operator=(const trace_player&) = delete;

  /// One pass over the events: what the timed loops run.
  void play();
  /// The same pass, reading the allocator's reserved bytes right after the event where live
  /// bytes peak. Run untimed after the timed loop, so that it sees the steady state that many
  /// replays leave behind and the timed passes carry no probe.
  std::optional<std::size_t> play_and_probe();

 private:
  allocator& target_;
  const trace& workload_;
  std::vector<void*> persistent_;
  std::vector<void*> slots_;
};

/// Sets items processed (one item per alloc or free), "ns_per_op" and, when `reserved_at_peak`
/// is known, "fragmentation" (reserved / live at the live peak) and "peak_live_MiB".
void report_replay(benchmark::State& state, const trace& workload,
                   std::size_t replays_per_iteration, std::optional<std::size_t> reserved_at_peak);

}  // namespace tandem::bench
