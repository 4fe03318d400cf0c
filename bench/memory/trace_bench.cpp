// trace/<allocator>/<batch>: replays of one ResNet-50-like training iteration (traces.hpp), with
// the parameters allocated beforehand and kept; batch 64 (about 1.6 GiB peak) and batch 256
// (a GPU-sized job). Reports ns per alloc or free, and fragmentation
// where the allocator can tell its footprint.

#include <benchmark/benchmark.h>

#include <map>
#include <mutex>

#include "allocators.hpp"
#include "replay.hpp"
#include "traces.hpp"

namespace tandem::bench {
namespace {

constexpr std::size_t replays_per_iteration = 4;

void trace_replay(benchmark::State& state, const allocator_factory& factory) {
  static std::mutex mutex;
  static std::map<std::int64_t, trace> by_batch;  // generated once per batch, never mutated after
  const trace* found = nullptr;
  {
    const std::lock_guard lock(mutex);
    auto [at, added] = by_batch.try_emplace(state.range(0));
    if (added)
      at->second = make_resnet50_trace(/*seed=*/7, static_cast<std::size_t>(state.range(0)));
    found = &at->second;
  }
  const trace& workload = *found;
  auto target = factory.open();
  trace_player player(*target, workload);
  player.play();  // untimed warm-up: every allocator starts from its steady state
  for (auto _ : state) {
    for (std::size_t i = 0; i < replays_per_iteration; ++i) player.play();
  }
  report_replay(state, workload, replays_per_iteration, player.play_and_probe());
}

const bool registered = [] {
  for (const auto& factory : allocator_factories()) {
    benchmark::RegisterBenchmark(("trace/" + factory.name).c_str(), trace_replay, factory)
        ->Arg(64)
        ->Arg(256)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
}  // namespace tandem::bench
