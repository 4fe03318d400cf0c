#include "tandem/sim/region_replay.hpp"

#include <map>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/device_pool.hpp"

namespace tandem::sim {
namespace {

/// Collects the job's region moves at the replay's current (virtual) time.
class region_recorder final : public memory::trace_sink {
 public:
  double now_s = 0;
  bool recording = false;
  schedule::usage_curve curve;
  std::size_t held = 0;

  void on_event(const memory::trace_event& event) override {
    std::int64_t delta = 0;
    if (event.op == memory::trace_op::region_borrow) delta = static_cast<std::int64_t>(event.bytes);
    if (event.op == memory::trace_op::region_return)
      delta = -static_cast<std::int64_t>(event.bytes);
    if (delta == 0) return;
    held = static_cast<std::size_t>(static_cast<std::int64_t>(held) + delta);
    if (!recording) return;
    if (!curve.steps.empty() && curve.steps.back().at_s == now_s) {
      curve.steps.back().delta += delta;  // moves at one instant are one step
      if (curve.steps.back().delta == 0) curve.steps.pop_back();
    } else {
      curve.steps.push_back({now_s, delta});
    }
  }
};

std::size_t round_up(std::size_t bytes, std::size_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

/// Enough room for the job alone: everything it could hold at once, plus a region per class
/// of the pool (five).
std::size_t replay_capacity(const job_profile& profile, std::size_t region_size) {
  std::size_t persistent = 0;
  for (const auto size : profile.persistent_tensors) persistent += round_up(size, region_size);
  std::size_t transient = 0;
  for (const auto& step : profile.steps) {
    if (step.bytes > 0) transient += round_up(static_cast<std::size_t>(step.bytes), region_size);
  }
  return persistent + transient + 5 * region_size;
}

void replay_on(memory::device_pool& pool, memory::job_id job, device::stream& stream,
               region_recorder& recorder, job_profile& profile) {
  // Held through the iteration, freed at the end as the job's own tensors would be.
  std::vector<void*> persistent;
  for (const auto size : profile.persistent_tensors)
    persistent.push_back(pool.allocate(job, stream, size, memory::alloc_kind::persistent));

  std::size_t live = 0;
  std::size_t most_live = 0;
  for (int pass = 0; pass < 2; ++pass) {
    recorder.recording = pass == 1;
    recorder.curve = {};
    recorder.curve.held_at_start = recorder.held;
    std::map<std::size_t, std::vector<void*>> live_by_size;
    for (std::size_t i = 0; i < profile.steps.size(); ++i) {
      const auto& step = profile.steps[i];
      recorder.now_s = step.at_s;
      const auto size = static_cast<std::size_t>(step.bytes > 0 ? step.bytes : -step.bytes);
      if (step.bytes > 0) {
        live_by_size[size].push_back(pool.allocate(job, stream, size, step.kind));
        live += size;
        most_live = std::max(most_live, live);
        continue;
      }
      auto& same = live_by_size[size];
      TANDEM_EXPECTS(!same.empty(), config_error,
                     profile.model + ": step " + std::to_string(i) + " frees " +
                         format_bytes(size) +
                         " but no live allocation has that size; a profile's frees must "
                         "match its allocations");
      static_cast<void>(pool.deallocate(job, same.back()));
      same.pop_back();
      live -= size;
      // No device work is pending in a replay, so a free is complete at once, as it would be
      // on a GPU shortly after the kernels that used it.
      pool.synchronize(job);
    }
    TANDEM_EXPECTS(live == 0, config_error,
                   profile.model + ": an iteration's allocations are not all freed (" +
                       format_bytes(live) +
                       " stay live); steps must describe one balanced iteration");
  }
  recorder.recording = false;
  for (void* tensor : persistent) static_cast<void>(pool.deallocate(job, tensor));
  recorder.curve.duration_s = profile.solo_iteration_s();
  profile.held = std::move(recorder.curve);
  std::size_t persistent_bytes = 0;
  for (const auto size : profile.persistent_tensors) persistent_bytes += size;
  profile.peak_live_bytes = persistent_bytes + most_live;
}

}  // namespace

void replay_regions(job_profile& profile, std::size_t region_size) {
  memory::pool_options options;
  options.region_size = region_size;
  options.capacity = replay_capacity(profile, region_size);
  // The backend's limit is the machine's memory, but a replay reserves address space only
  // (nothing is touched), so a GPU-sized profile replays on a small machine too.
  device::cpu_backend backend(
      device::cpu_backend_options{.memory_limit = options.capacity, .copy_bandwidth = 0});
  region_recorder recorder;  // outlives the pool, which may trace as it goes
  memory::device_pool pool(backend, options);
  pool.set_trace_sink(&recorder);
  const auto job = pool.add_job(profile.model);
  auto stream = backend.create_stream("replay", device::stream_kind::compute);

  try {
    replay_on(pool, job, *stream, recorder, profile);
  } catch (...) {
    pool.remove_job(job);  // before the stream goes: the pool may still use it
    throw;
  }
  pool.remove_job(job);
  pool.set_trace_sink(nullptr);
}

}  // namespace tandem::sim
