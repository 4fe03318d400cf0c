#include "replay.hpp"

#include "tandem/common/units.hpp"

namespace tandem::bench {

trace_player::trace_player(allocator& target, const trace& workload)
    : target_(target), workload_(workload), slots_(workload.slots, nullptr) {
  persistent_.reserve(workload.persistent.size());
  for (auto bytes : workload.persistent) {
    persistent_.push_back(target_.allocate(bytes, memory::alloc_kind::persistent));
  }
}

trace_player::~trace_player() {
  for (void* ptr : persistent_) target_.deallocate(ptr);
}

void trace_player::play() {
  for (const auto& event : workload_.events) {
    if (event.allocate) {
      slots_[event.slot] = target_.allocate(event.bytes, event.kind);
    } else {
      target_.deallocate(slots_[event.slot]);
    }
  }
  benchmark::ClobberMemory();  // the pointers count as used
}

std::optional<std::size_t> trace_player::play_and_probe() {
  std::optional<std::size_t> reserved;
  const auto& events = workload_.events;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& event = events[i];
    if (event.allocate) {
      slots_[event.slot] = target_.allocate(event.bytes, event.kind);
    } else {
      target_.deallocate(slots_[event.slot]);
    }
    if (i == workload_.peak_event) reserved = target_.reserved_bytes();
  }
  return reserved;
}

void report_replay(benchmark::State& state, const trace& workload,
                   std::size_t replays_per_iteration, std::optional<std::size_t> reserved_at_peak) {
  const auto ops = static_cast<double>(workload.events.size() * replays_per_iteration);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(ops));
  // ops * 1e-9 per iteration, inverted rate: seconds * 1e9 / op, i.e. ns per op.
  state.counters["ns_per_op"] = benchmark::Counter(
      ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["peak_live_MiB"] =
      static_cast<double>(workload.peak_live_bytes) / static_cast<double>(MiB);
  if (reserved_at_peak) {
    state.counters["fragmentation"] =
        static_cast<double>(*reserved_at_peak) / static_cast<double>(workload.peak_live_bytes);
  }
}

}  // namespace tandem::bench
