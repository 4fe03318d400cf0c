#pragma once
// The shared device-memory pool: one per device, under one budget, serving every job.
//
// Contract (see docs/ARCHITECTURE.md, "The pool"):
// - allocate(job, stream, bytes, kind) returns memory for use on `stream` (rounded up to
//   options.granularity). The pointer is valid for the job until deallocate().
// - deallocate(job, ptr) frees on the stream the block was allocated on; work already enqueued on
//   that stream may still use it. To use a block on another stream as well, call record_stream()
//   first, as with c10's recordStream; using it on another stream without that is undefined.
// - Memory passes to another stream only after an event proves the device is done with it, or
//   behind a stream wait; it passes to another job only when a whole region is free and synced
//   (Zico §6.1). The bytes of regions held by jobs never exceed the budget.
// - A stream a job used must outlive the pool and the job, or be detached with detach_stream()
//   first: removing a job waits for its streams.
// - allocate throws out_of_memory_error (with a report) when the request cannot be met, and
//   usage_error for calls that break the contract. deallocate never throws: a refused free leaves
//   the pool untouched and is reported through the diagnostic handler.
//
// Thread safety: all members may be called concurrently, except that a job must not be used
// while (or after) it is being removed.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tandem/device/backend.hpp"
#include "tandem/memory/alloc_kind.hpp"
#include "tandem/memory/borrow_gate.hpp"
#include "tandem/memory/free_status.hpp"
#include "tandem/memory/out_of_memory.hpp"
#include "tandem/memory/pool_options.hpp"
#include "tandem/memory/pressure_relief.hpp"
#include "tandem/memory/stats.hpp"
#include "tandem/memory/trace.hpp"

namespace tandem::memory {

namespace detail {
class job_arena;
struct pool_context;
}  // namespace detail

class device_pool {
 public:
  /// Reserves options.capacity bytes on `backend`. Throws config_error for invalid options and
  /// device_error when the device cannot supply the memory.
  device_pool(device::backend& backend, pool_options options);
  /// Waits for every job's streams and releases the reservation.
  ~device_pool();
  device_pool(const device_pool&) = delete;
  device_pool& operator=(const device_pool&) = delete;

  /// Registers a job (a local area). Throws usage_error when options.max_jobs are registered.
  [[nodiscard]] job_id add_job(std::string name);
  /// Waits for the job's streams, returns its regions to the sharable area and forgets it.
  /// Allocations still live (the job failed, or something outside it still holds a tensor) keep
  /// their regions out of other jobs' reach until they are freed (Note [Retired arenas]); a
  /// diagnostic names them. Returns their bytes. The job's streams may be destroyed afterwards.
  std::size_t remove_job(job_id job);

  /// Throws out_of_memory_error or usage_error; returns nullptr for 0 bytes.
  [[nodiscard]] void* allocate(job_id job, device::stream& stream, std::size_t bytes,
                               alloc_kind kind = alloc_kind::unknown);
  free_status deallocate(job_id job, void* ptr) noexcept;
  /// `ptr` (live, of `job`) is also used by work on `stream`; its free will wait for that work.
  void record_stream(job_id job, void* ptr, device::stream& stream);
  /// Call before destroying a stream that `job` used; waits for the frees made on it.
  void detach_stream(job_id job, const device::stream& stream);

  /// Turns completed frees of `job` into reusable memory and returns its empty regions; never
  /// blocks. The runtime calls it at iteration boundaries.
  void poll(job_id job);
  /// Waits for the device so that every free of `job` completes (Waterwave's SyncAndCoalesce).
  void synchronize(job_id job);

  /// Throws usage_error above the capacity. Lowering below what jobs hold takes effect as they
  /// return regions; no live allocation is touched.
  void set_budget(std::size_t bytes);
  [[nodiscard]] std::size_t budget() const;
  /// A budget of `job`'s own (a static partition) inside the pool's; 0 removes it. Like the
  /// pool's budget, lowering it below what the job holds only refuses new regions.
  void set_job_limit(job_id job, std::size_t bytes);
  [[nodiscard]] const pool_options& options() const;
  [[nodiscard]] device::backend& backend() const { return backend_; }
  [[nodiscard]] bool owns(const void* ptr) const;
  /// The job holding the region `ptr` lies in; empty outside the pool or in a free region.
  [[nodiscard]] std::optional<job_id> owner_of(const void* ptr) const;
  /// Start of the pool's memory; trace offsets count from here.
  [[nodiscard]] const std::byte* base() const;

  [[nodiscard]] pool_stats stats() const;
  [[nodiscard]] job_stats stats(job_id job) const;
  [[nodiscard]] std::string job_name(job_id job) const;

  /// Every region borrow and return goes through `gate` (nullptr: the budget alone decides), and
  /// an allocation that finds no memory asks it whether to wait and try again (borrow_gate.hpp).
  /// Set it before jobs allocate; the gate must outlive the pool or be unset first.
  void set_borrow_gate(borrow_gate* gate);

  /// An allocation of `job` that finds no memory asks `relief` to free some of the job's own
  /// before it waits or fails (pressure_relief.hpp); nullptr stops it. `relief` must outlive
  /// its setting.
  void set_pressure_relief(job_id job, pressure_relief* relief);
  /// Stops `relief` if it is the job's relief now (another set since stays).
  void clear_pressure_relief(job_id job, pressure_relief* relief);
  /// The job's relief now (nullptr: none).
  [[nodiscard]] pressure_relief* pressure_relief_of(job_id job);

  /// Every alloc, free, region move and refusal goes to `sink` (nullptr to stop). The sink must
  /// outlive the pool or be unset first.
  void set_trace_sink(trace_sink* sink);
  /// Receives a message for every refused free and every job removed with live allocations.
  /// The default writes it to stderr.
  void set_diagnostic_handler(std::function<void(const std::string&)> handler);

 private:
  [[nodiscard]] detail::job_arena& arena(job_id job) const;
  [[nodiscard]] oom_report make_report(const detail::job_arena& arena, std::size_t bytes,
                                       alloc_kind kind) const;
  void reclaim_from_others(detail::job_arena& requester);
  /// A retired arena whose last block was just freed: its slot becomes free for a new job.
  void forget_drained(job_id job, detail::job_arena* arena) noexcept;
  void report(const std::string& message) noexcept;

  device::backend& backend_;
  std::unique_ptr<device::reservation> memory_;
  std::unique_ptr<detail::pool_context> context_;
  // By job id; null when free. A retired arena keeps its slot until drained.
  std::unique_ptr<std::atomic<detail::job_arena*>[]> jobs_;
  std::mutex jobs_mutex_;  // serializes add, remove and forgetting drained arenas
  // Drained arenas, kept until the pool goes: a free racing with the one that drained an arena
  // may still hold its pointer (it then finds no live block there).
  std::vector<std::unique_ptr<detail::job_arena>> drained_;  // guarded by jobs_mutex_
  std::atomic<std::size_t> job_count_{0};
  std::atomic<std::uint64_t> invalid_frees_{0};
  std::mutex diagnostic_mutex_;
  std::function<void(const std::string&)> diagnostic_;  // guarded by diagnostic_mutex_
};

}  // namespace tandem::memory
