#pragma once
// Watches the pool's trace: each job's live bytes by kind and the regions it holds, the peak of
// each job's live bytes within a window (an iteration), and, when asked, the memory timeline as
// CSV, one row per event:
//
//   time_s,job,event,unknown,persistent,feature_map,gradient,temporary,live_bytes,reserved_bytes
//
// The byte columns are the job's state after the event. Because the pool traces a region's
// return before the region can be borrowed again, summing the latest reserved_bytes of every
// job at any row never exceeds the budget (the integration tests check exactly that).
//
// In a session the monitor is the pool's one trace sink. Whoever else needs a job's events (the
// access recorder of `tandem profile`, a plan's executor) subscribes to that job through it
// (attach/detach) instead of taking the pool's sink.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <ostream>
#include <shared_mutex>
#include <string>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"
#include "tandem/memory/trace.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/schedule/reads_progress.hpp"
#include "tandem/schedule/usage_curve.hpp"

namespace tandem::runtime {

struct job_memory {
  std::array<std::size_t, memory::alloc_kind_count> live_by_kind{};
  std::size_t live_bytes = 0;
  std::size_t reserved_bytes = 0;
};

class memory_monitor final : public memory::trace_sink, public schedule::progress_source {
 public:
  /// `timeline`: where CSV rows go (nullptr for none); it must outlive the monitor. `origin`:
  /// time zero of the time_s column.
  /// `record_allocations`: windows also keep every allocation and free (for profiles).
  /// `record_memory_events`: windows keep each allocation and free with the regions held after
  /// it (for policies that ask: group_gating::wants_memory_events).
  explicit memory_monitor(
      std::ostream* timeline = nullptr,
      std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now(),
      bool record_allocations = false, bool record_memory_events = false);

  /// Names a job in the timeline (rows of unnamed jobs show the id).
  void name_job(memory::job_id job, std::string name);

  void on_event(const memory::trace_event& event) override;

  /// Forwards `job`'s events (every one, out_of_memory included) to `sink` as well, until
  /// detach(job); one subscriber per job, a second attach replaces the first. The sink is called
  /// on the thread that caused the event, under the pool's lock of the job (so one job's events
  /// reach it one at a time and in order), outside the monitor's own lock, so it may call the
  /// monitor; it must be quick. Thread-safe. With nothing attached an event costs one atomic
  /// load more.
  void attach(memory::job_id job, memory::trace_sink* sink);
  /// Stops forwarding `job`'s events; once it returns, no call to the sink is under way.
  void detach(memory::job_id job);

  [[nodiscard]] job_memory current(memory::job_id job) const;
  /// Whether windows keep every allocation and free (the constructor's `record_allocations`).
  [[nodiscard]] bool records_allocations() const { return record_allocations_; }
  /// Region events since the job's window (iteration) started, and the regions it holds.
  [[nodiscard]] schedule::job_progress_view progress(memory::job_id job) const override;
  /// What a window (an iteration) saw of a job: its live bytes at their highest, and the
  /// regions it held (a usage curve, times relative to the window's start).
  struct window {
    std::size_t peak_live_bytes = 0;
    schedule::usage_curve held;
    std::vector<allocation_step> allocations;    ///< when recording allocations
    std::vector<schedule::memory_event> memory;  ///< when recording memory events
  };
  /// Closes `job`'s window and starts the next at its current state.
  window restart_window(memory::job_id job);
  /// restart_window(job).peak_live_bytes.
  std::size_t restart_peak_window(memory::job_id job) {
    return restart_window(job).peak_live_bytes;
  }

  static constexpr const char* csv_header =
      "time_s,job,event,unknown,persistent,feature_map,gradient,temporary,live_bytes,"
      "reserved_bytes";

 private:
  /// The monitor's own bookkeeping of an event (and its timeline row).
  void record(const memory::trace_event& event);

  struct job_state {
    job_memory memory;
    std::size_t window_peak = 0;
    double window_start_s = 0;
    schedule::usage_curve window_held;
    std::vector<allocation_step> window_allocations;
    std::vector<schedule::memory_event> window_memory;
    std::string name;
  };

  mutable std::mutex mutex_;
  std::map<memory::job_id, job_state> jobs_;  // guarded by mutex_
  std::ostream* timeline_;                    // guarded by mutex_
  std::chrono::steady_clock::time_point origin_;
  bool record_allocations_;
  bool record_memory_events_;

  std::atomic<bool> any_subscriber_{false};
  mutable std::shared_mutex subscribers_mutex_;
  std::map<memory::job_id, memory::trace_sink*> subscribers_;  // guarded by subscribers_mutex_
};

}  // namespace tandem::runtime
