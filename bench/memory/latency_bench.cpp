// latency/<allocator>/<bytes>: allocate then free at once, one size at a time, on 1 thread and
// on 2 (for tandem two jobs, each with its own stream, on one pool; for the others the same
// calls from both threads). Reports ns per alloc+free pair as each thread sees it.

#include <benchmark/benchmark.h>

#include "allocators.hpp"
#include "tandem/common/units.hpp"

namespace tandem::bench {
namespace {

void latency(benchmark::State& state, const allocator_factory& factory) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto target = factory.open();  // per thread: its own tandem job and stream
  for (auto _ : state) {
    void* ptr = target->allocate(bytes, memory::alloc_kind::unknown);
    benchmark::DoNotOptimize(ptr);
    target->deallocate(ptr);
  }
  state.SetItemsProcessed(state.iterations());  // one item: one alloc+free pair
  // Per-thread latency, not the aggregate time per pair that the Time column shows for 2
  // threads: the threads' values are summed and the iterations counted over all threads, hence
  // 1e-9 / threads with kAvgThreads; inverting the rate gives ns per pair.
  const double threads = state.threads();
  state.counters["ns_per_op"] = benchmark::Counter(
      1e-9 / threads, benchmark::Counter::kIsIterationInvariantRate |
                          benchmark::Counter::kAvgThreads | benchmark::Counter::kInvert);
}

const bool registered = [] {
  for (const auto& factory : allocator_factories()) {
    auto* family =
        benchmark::RegisterBenchmark(("latency/" + factory.name).c_str(), latency, factory);
    for (std::size_t bytes : {256 * std::size_t{1}, 4 * KiB, 64 * KiB, MiB, 16 * MiB, 256 * MiB}) {
      family->Arg(static_cast<std::int64_t>(bytes));
    }
    family->Threads(1)->Threads(2)->UseRealTime();
  }
  return true;
}();

}  // namespace
}  // namespace tandem::bench
