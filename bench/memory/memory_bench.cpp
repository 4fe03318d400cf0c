// Allocator benchmarks: every workload against every allocator (allocators.hpp).
//   latency/<allocator>/<bytes>   alloc+free of one size, 1 and 2 threads (2 jobs for tandem)
//   trace/<allocator>             replay of a DNN-like iteration (dnn_trace.hpp)
//   random/<allocator>/<max>      RMM-style random allocations under a usage cap
// ns per operation = 1e9 / items_per_second; bench/memory/report.sh prints the table.

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "allocators.hpp"
#include "dnn_trace.hpp"
#include "tandem/common/units.hpp"

namespace tandem::bench {
namespace {

void latency(benchmark::State& state, const std::string& name) {
  auto session = allocator_named(name).open_session();
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* ptr = session->allocate(bytes, memory::alloc_kind::unknown);
    benchmark::DoNotOptimize(ptr);
    session->deallocate(ptr, bytes);
  }
  state.SetItemsProcessed(2 * state.iterations());
}

void trace_replay(benchmark::State& state, const std::string& name) {
  static const dnn_trace trace = make_dnn_trace(7);
  static const std::vector<std::size_t> parameters = make_parameter_sizes(7);
  auto session = allocator_named(name).open_session();
  std::vector<void*> kept;
  std::size_t kept_bytes = 0;
  for (auto bytes : parameters) {
    kept.push_back(session->allocate(bytes, memory::alloc_kind::persistent));
    kept_bytes += bytes;
  }
  std::vector<void*> slots(trace.slots);
  std::vector<std::size_t> sizes(trace.slots);
  std::size_t live = kept_bytes;
  std::size_t peak_live = 0;
  std::size_t reserved_at_peak = 0;
  for (auto _ : state) {
    for (const auto& op : trace.ops) {
      if (op.allocate) {
        slots[op.slot] = session->allocate(op.bytes, op.kind);
        sizes[op.slot] = op.bytes;
        live += op.bytes;
        if (live > peak_live) {
          peak_live = live;
          state.PauseTiming();
          reserved_at_peak = session->reserved_bytes();
          state.ResumeTiming();
        }
      } else {
        session->deallocate(slots[op.slot], sizes[op.slot]);
        live -= sizes[op.slot];
      }
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(trace.ops.size()) * state.iterations());
  if (reserved_at_peak > 0) {
    state.counters["fragmentation"] =
        static_cast<double>(reserved_at_peak) / static_cast<double>(peak_live);
  }
  state.counters["peak_live_MiB"] = static_cast<double>(peak_live) / static_cast<double>(MiB);
  for (std::size_t i = 0; i < kept.size(); ++i) session->deallocate(kept[i], parameters[i]);
}

void random_allocations(benchmark::State& state, const std::string& name) {
  const auto max_bytes = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t cap = 2 * GiB;
  constexpr int operations = 10000;
  auto session = allocator_named(name).open_session();
  struct block {
    void* ptr;
    std::size_t bytes;
  };
  for (auto _ : state) {
    std::mt19937_64 random(42);  // the same sequence every iteration and for every allocator
    std::uniform_int_distribution<std::size_t> size(KiB, max_bytes);
    std::vector<block> live;
    std::size_t live_bytes = 0;
    for (int op = 0; op < operations; ++op) {
      const auto bytes = size(random);
      const bool allocate = random() % 100 < 70 && live_bytes + bytes <= cap;
      if (allocate || live.empty()) {
        if (live_bytes + bytes > cap) continue;
        live.push_back({session->allocate(bytes, memory::alloc_kind::unknown), bytes});
        live_bytes += bytes;
      } else {
        const auto pick = random() % live.size();
        session->deallocate(live[pick].ptr, live[pick].bytes);
        live_bytes -= live[pick].bytes;
        live[pick] = live.back();
        live.pop_back();
      }
    }
    for (const auto& b : live) session->deallocate(b.ptr, b.bytes);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(operations) * state.iterations());
}

bool register_all() {
  for (const auto& name : allocator_names()) {
    auto* l = benchmark::RegisterBenchmark(("latency/" + name).c_str(), latency, name);
    for (std::int64_t bytes : {256L, 4L << 10, 64L << 10, 1L << 20, 16L << 20, 256L << 20}) {
      l->Arg(bytes);
    }
    l->Threads(1)->Threads(2)->UseRealTime();
    benchmark::RegisterBenchmark(("trace/" + name).c_str(), trace_replay, name)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("random/" + name).c_str(), random_allocations, name)
        ->Arg(4 << 20)
        ->Arg(64 << 20)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace tandem::bench

BENCHMARK_MAIN();
