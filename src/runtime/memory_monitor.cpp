#include "tandem/runtime/memory_monitor.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tandem/common/csv.hpp"

namespace tandem::runtime {

using memory::trace_op;

memory_monitor::memory_monitor(std::ostream* timeline, std::chrono::steady_clock::time_point origin,
                               bool record_allocations, bool record_memory_events)
    : timeline_(timeline),
      origin_(origin),
      record_allocations_(record_allocations),
      record_memory_events_(record_memory_events) {
  if (timeline_ != nullptr) *timeline_ << csv_header << '\n';
}

void memory_monitor::name_job(memory::job_id job, std::string name) {
  std::lock_guard lock(mutex_);
  jobs_[job].name = std::move(name);
}

void memory_monitor::attach(memory::job_id job, memory::trace_sink* sink) {
  std::unique_lock lock(subscribers_mutex_);
  if (sink == nullptr) {
    subscribers_.erase(job);
  } else {
    subscribers_[job] = sink;
  }
  any_subscriber_.store(!subscribers_.empty(), std::memory_order_release);
}

void memory_monitor::detach(memory::job_id job) {
  attach(job, nullptr);
}

void memory_monitor::on_event(const memory::trace_event& event) {
  record(event);
  if (!any_subscriber_.load(std::memory_order_acquire)) return;
  std::shared_lock lock(subscribers_mutex_);
  const auto found = subscribers_.find(event.job);
  if (found != subscribers_.end()) found->second->on_event(event);
}

void memory_monitor::record(const memory::trace_event& event) {
  if (event.op == trace_op::out_of_memory) return;  // changes nothing; the job reports it
  std::lock_guard lock(mutex_);
  // Stamped under the lock, so that the timeline's rows are in time order.
  const double time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
  auto& job = jobs_[event.job];
  auto& state = job.memory;
  const auto kind = memory::index_of(event.kind);
  switch (event.op) {
    case trace_op::alloc:
      if (record_allocations_) {
        job.window_allocations.push_back(
            {time_s - job.window_start_s, static_cast<std::int64_t>(event.bytes), event.kind});
      }
      state.live_by_kind[kind] += event.bytes;
      state.live_bytes += event.bytes;
      job.window_peak = std::max(job.window_peak, state.live_bytes);
      if (record_memory_events_) {
        job.window_memory.push_back({static_cast<std::int64_t>(event.bytes), state.reserved_bytes});
      }
      break;
    case trace_op::free:
      if (record_allocations_) {
        job.window_allocations.push_back(
            {time_s - job.window_start_s, -static_cast<std::int64_t>(event.bytes), event.kind});
      }
      state.live_by_kind[kind] -= std::min(state.live_by_kind[kind], event.bytes);
      state.live_bytes -= std::min(state.live_bytes, event.bytes);
      if (record_memory_events_) {
        job.window_memory.push_back(
            {-static_cast<std::int64_t>(event.bytes), state.reserved_bytes});
      }
      break;
    case trace_op::region_borrow:
      state.reserved_bytes += event.bytes;
      job.window_held.steps.push_back(
          {time_s - job.window_start_s, static_cast<std::int64_t>(event.bytes)});
      break;
    case trace_op::region_return:
      state.reserved_bytes -= std::min(state.reserved_bytes, event.bytes);
      job.window_held.steps.push_back(
          {time_s - job.window_start_s, -static_cast<std::int64_t>(event.bytes)});
      break;
    case trace_op::out_of_memory:
      break;
  }
  if (timeline_ == nullptr) return;
  const std::string name = job.name.empty() ? std::to_string(event.job) : csv_field(job.name);
  const auto& k = state.live_by_kind;
  *timeline_ << fmt::format("{:.6f},{},{},{},{},{},{},{},{},{}\n", time_s, name,
                            memory::to_string(event.op), k[0], k[1], k[2], k[3], k[4],
                            state.live_bytes, state.reserved_bytes);
}

job_memory memory_monitor::current(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? job_memory{} : found->second.memory;
}

schedule::job_progress_view memory_monitor::progress(memory::job_id job) const {
  std::lock_guard lock(mutex_);
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return {};
  return {found->second.window_held.steps.size(), found->second.memory.reserved_bytes};
}

memory_monitor::window memory_monitor::restart_window(memory::job_id job) {
  const double now_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
  std::lock_guard lock(mutex_);
  auto& state = jobs_[job];
  window closed{state.window_peak, std::move(state.window_held),
                std::move(state.window_allocations), std::move(state.window_memory)};
  state.window_allocations = {};
  state.window_memory = {};
  closed.held.duration_s = now_s - state.window_start_s;
  state.window_peak = state.memory.live_bytes;
  state.window_start_s = now_s;
  state.window_held = {};
  state.window_held.held_at_start = state.memory.reserved_bytes;
  return closed;
}

}  // namespace tandem::runtime
