// random/<allocator>/<max bytes>: RMM-style random allocations (traces.hpp): sizes uniform in
// 1 KiB..max, 70% allocations, live bytes capped at 2 GiB, a fixed seed. Reports ns per alloc
// or free (and fragmentation where known).

#include <benchmark/benchmark.h>

#include <map>
#include <mutex>

#include "allocators.hpp"
#include "replay.hpp"
#include "tandem/common/units.hpp"
#include "traces.hpp"

namespace tandem::bench {
namespace {

constexpr std::size_t steps = 10000;
constexpr std::size_t cap = 2 * GiB;
constexpr double allocate_probability = 0.7;

const trace& workload_for(std::size_t max_bytes) {
  static std::mutex mutex;
  static std::map<std::size_t, trace> made;
  std::lock_guard lock(mutex);
  auto found = made.find(max_bytes);
  if (found == made.end()) {
    found = made.emplace(max_bytes, make_random_trace(/*seed=*/42, steps, KiB, max_bytes, cap,
                                                      allocate_probability))
                .first;
  }
  return found->second;
}

void random_allocations(benchmark::State& state, const allocator_factory& factory) {
  const auto& workload = workload_for(static_cast<std::size_t>(state.range(0)));
  auto target = factory.open();
  trace_player player(*target, workload);
  player.play();  // untimed warm-up, as for the DNN trace
  for (auto _ : state) player.play();
  report_replay(state, workload, 1, player.play_and_probe());
}

const bool registered = [] {
  for (const auto& factory : allocator_factories()) {
    benchmark::RegisterBenchmark(("random/" + factory.name).c_str(), random_allocations, factory)
        ->Arg(static_cast<std::int64_t>(4 * MiB))
        ->Arg(static_cast<std::int64_t>(64 * MiB))
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace tandem::bench
