#include "tandem/memory/device_pool.hpp"

#include <cstdint>
#include <cstdio>
#include <limits>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/memory/detail/job_arena.hpp"
#include "tandem/memory/detail/pool_context.hpp"
#include "tandem/memory/fallback_scope.hpp"
#include "tandem/memory/no_wait_scope.hpp"

namespace tandem::memory {

namespace {
std::string pointer_text(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}
}  // namespace

device_pool::device_pool(device::backend& backend, pool_options options) : backend_(backend) {
  options.validate();
  const std::size_t regions = options.capacity / options.region_size;
  options.capacity = regions * options.region_size;
  TANDEM_EXPECTS(options.effective_budget() <= options.capacity, config_error,
                 "the budget (" + format_bytes(options.effective_budget()) +
                     ") exceeds the capacity rounded to whole regions (" +
                     format_bytes(options.capacity) + "); lower the budget or raise the capacity");
  memory_ = backend.reserve(options.capacity);
  context_ = std::make_unique<detail::pool_context>(memory_->base(), options, regions);
  jobs_ = std::make_unique<std::atomic<detail::job_arena*>[]>(options.max_jobs);
  for (std::size_t i = 0; i < options.max_jobs; ++i) jobs_[i].store(nullptr);
  diagnostic_ = [](const std::string& message) {
    std::fprintf(stderr, "tandem: %s\n", message.c_str());
  };
}

device_pool::~device_pool() {
  for (std::size_t i = 0; i < context_->options.max_jobs; ++i) {
    if (auto* job = jobs_[i].exchange(nullptr); job != nullptr) {
      try {
        job->release_all();
      } catch (const std::exception& failure) {
        report(std::string("while destroying the pool: ") + failure.what());
      }
      delete job;
    }
  }
}

detail::job_arena& device_pool::arena(job_id job) const {
  detail::job_arena* found =
      job < context_->options.max_jobs ? jobs_[job].load(std::memory_order_acquire) : nullptr;
  TANDEM_EXPECTS(found != nullptr && !found->retired(), usage_error,
                 "job id " + std::to_string(job) +
                     " is not registered with this pool (never added, or removed); use the id "
                     "add_job returned while the job is registered");
  return *found;
}

job_id device_pool::add_job(std::string name) {
  std::lock_guard lock(jobs_mutex_);
  for (std::size_t i = 0; i < context_->options.max_jobs; ++i) {
    if (jobs_[i].load(std::memory_order_relaxed) == nullptr) {
      const auto id = static_cast<job_id>(i);
      jobs_[i].store(new detail::job_arena(id, std::move(name), *context_),
                     std::memory_order_release);
      job_count_.fetch_add(1);
      return id;
    }
  }
  TANDEM_FAIL(usage_error, "cannot add job '" + name +
                               "': " + std::to_string(context_->options.max_jobs) +
                               " jobs are registered, the pool's max_jobs; remove finished jobs "
                               "or raise max_jobs");
}

std::size_t device_pool::remove_job(job_id job) {
  std::size_t left = 0;
  std::string name;
  {
    std::lock_guard lock(jobs_mutex_);
    auto& leaving = arena(job);
    left = leaving.retire();
    job_count_.fetch_sub(1);
    if (left == 0) {
      jobs_[job].store(nullptr, std::memory_order_release);
      delete &leaving;
      return 0;
    }
    name = leaving.name();
  }
  report("job '" + name + "' left the pool with " + format_bytes(left) +
         " of tensors still alive; their regions stay out of other jobs' reach until they are "
         "freed");
  return left;
}

void device_pool::forget_drained(job_id job, detail::job_arena* arena) noexcept {
  try {
    std::lock_guard lock(jobs_mutex_);
    if (jobs_[job].load(std::memory_order_relaxed) != arena) return;  // another free forgot it
    drained_.emplace_back(arena);
    jobs_[job].store(nullptr, std::memory_order_release);
  } catch (...) {
    // Out of memory for the list: the arena keeps its slot, which costs one job id.
  }
}

void* device_pool::allocate(job_id job, device::stream& stream, std::size_t bytes,
                            alloc_kind kind) {
  auto& owner = arena(job);
  if (bytes == 0) return nullptr;
  const std::size_t granularity = context_->options.granularity;
  const bool too_large = bytes > context_->options.capacity;
  const std::size_t rounded = too_large ? bytes : align_up(bytes, granularity);
  if (!too_large) {
    if (void* ptr = owner.try_allocate(stream, rounded, kind)) return ptr;
    // Other jobs may hold empty regions whose frees the device has not finished yet.
    reclaim_from_others(owner);
    if (void* ptr = owner.try_allocate(stream, rounded, kind)) return ptr;
    if (no_wait_scope::here()) {
      auto report = make_report(owner, rounded, kind);
      report.put_off = true;
      throw out_of_memory_error(report);
    }
    // The job may give up some of its own memory (Capuchin's passive swapping), no lock held.
    auto* relief = owner.relief();
    // Asks the relief at `moment` until the allocation fits or it has nothing more to give.
    const auto relieved = [&](relief_moment moment) -> void* {
      while (relief->relieve(job, rounded, moment)) {
        if (void* ptr = owner.try_allocate(stream, rounded, kind)) return ptr;
      }
      return nullptr;
    };
    if (relief != nullptr) {
      if (void* ptr = relieved(relief_moment::before_waiting)) return ptr;
    }
    // A gate may know that running iterations will return regions: wait for them, no lock held.
    // Where no wait would serve, it may have the job make room itself first.
    if (auto* gate = context_->gate.load(std::memory_order_acquire)) {
      bool waited = false;
      bool can_make_room = relief != nullptr;
      void* ptr = nullptr;
      try {
        while (ptr == nullptr) {
          auto room = owner.room_for(rounded, kind);
          room.can_make_room = can_make_room;
          room.caller_falls_back = fallback_scope::here();
          const auto answer = gate->wait_for_regions(job, rounded, room);
          if (answer == wait_answer::fail) break;
          if (answer == wait_answer::make_room) {
            if (!can_make_room) break;  // not offered: fail rather than ask forever
            // Once: asked again, the gate waits, restarts or fails instead.
            can_make_room = false;
            ptr = relieved(relief_moment::instead_of_failing);
            continue;
          }
          waited = true;
          reclaim_from_others(owner);
          ptr = owner.try_allocate(stream, rounded, kind);
        }
      } catch (...) {
        if (waited) gate->wait_ended(job);
        throw;
      }
      if (waited) gate->wait_ended(job);
      if (ptr != nullptr) return ptr;
    } else if (relief != nullptr) {
      if (void* ptr = relieved(relief_moment::instead_of_failing)) return ptr;
    }
    if (void* ptr = owner.try_allocate_in_other_class(stream, rounded, kind)) return ptr;
  }
  // Not the job's failure where its caller copes (fallback_scope.hpp).
  if (!fallback_scope::here()) {
    owner.count_out_of_memory();
    if (auto* sink = context_->sink.load(std::memory_order_acquire)) {
      sink->on_event(
          {context_->now_ns(), trace_op::out_of_memory, job, stream.id(), kind, rounded, 0});
    }
  }
  throw out_of_memory_error(make_report(owner, rounded, kind));
}

void device_pool::reclaim_from_others(detail::job_arena& requester) {
  // Called without the requester's lock held, so taking other arenas' locks cannot deadlock.
  bool waited = false;
  for (std::size_t i = 0; i < context_->options.max_jobs; ++i) {
    auto* other = jobs_[i].load(std::memory_order_acquire);
    if (other != nullptr && other != &requester) waited = other->synchronize() || waited;
  }
  if (waited) requester.count_host_sync();
}

free_status device_pool::deallocate(job_id job, void* ptr) noexcept {
  if (ptr == nullptr) return free_status::null_pointer;
  auto* owner =
      job < context_->options.max_jobs ? jobs_[job].load(std::memory_order_acquire) : nullptr;
  // Labels for messages are built only on the error paths: frees are hot.
  auto label = [&] { return owner != nullptr ? "'" + owner->name() + "'" : std::to_string(job); };
  free_status status = free_status::ok;
  try {
    if (owner == nullptr) {
      status = free_status::unknown_job;
    } else if (!memory_->contains(ptr)) {
      status = free_status::foreign_pointer;
    } else if (const auto region_owner = owner_of(ptr); !region_owner) {
      status = free_status::not_allocated;
    } else if (*region_owner != job) {
      status = free_status::wrong_job;
    } else {
      status = owner->deallocate(
          static_cast<std::size_t>(static_cast<std::byte*>(ptr) - memory_->base()));
      // drained() takes the arena's lock: asked only of a retired arena, not on every free.
      if (status == free_status::ok && owner->retired() && owner->drained()) {
        forget_drained(job, owner);
      }
    }
  } catch (const std::exception& failure) {
    report("freeing " + pointer_text(ptr) + " for job " + label() + " failed: " + failure.what());
    return free_status::ok;
  }
  if (status != free_status::ok) {
    invalid_frees_.fetch_add(1, std::memory_order_relaxed);
    report("job " + label() + " freed " + pointer_text(ptr) + ": " + to_string(status) +
           "; the free was ignored and the pool is unchanged");
  }
  return status;
}

void device_pool::record_stream(job_id job, void* ptr, device::stream& stream) {
  auto& owner = arena(job);
  TANDEM_EXPECTS(memory_->contains(ptr), usage_error,
                 "record_stream: " + pointer_text(ptr) + " is not memory of this pool");
  const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(ptr) - memory_->base());
  TANDEM_EXPECTS(owner.record_stream(offset, stream), usage_error,
                 "record_stream: " + pointer_text(ptr) + " is not a live allocation of job '" +
                     owner.name() + "'");
}

void device_pool::detach_stream(job_id job, const device::stream& stream) {
  arena(job).detach_stream(stream);
}

void device_pool::poll(job_id job) {
  arena(job).poll();
}

void device_pool::synchronize(job_id job) {
  arena(job).synchronize();
}

void device_pool::set_budget(std::size_t bytes) {
  context_->region_supply.set_budget(bytes);
}

void device_pool::set_job_limit(job_id job, std::size_t bytes) {
  arena(job).set_limit(bytes);
}

std::size_t device_pool::budget() const {
  return context_->region_supply.budget();
}

const pool_options& device_pool::options() const {
  return context_->options;
}

bool device_pool::owns(const void* ptr) const {
  return memory_->contains(ptr);
}

std::optional<job_id> device_pool::owner_of(const void* ptr) const {
  if (!memory_->contains(ptr)) return std::nullopt;
  const auto offset =
      static_cast<std::size_t>(static_cast<const std::byte*>(ptr) - memory_->base());
  const job_id owner = context_->region_supply.owner(offset / context_->options.region_size);
  if (owner == no_job) return std::nullopt;
  return owner;
}

const std::byte* device_pool::base() const {
  return memory_->base();
}

pool_stats device_pool::stats() const {
  const auto& regions = context_->region_supply;
  pool_stats out;
  out.capacity = regions.capacity();
  out.budget = regions.budget();
  out.region_size = regions.region_size();
  out.live_bytes = context_->live_bytes.load();
  out.peak_live_bytes = context_->peak_live_bytes.load();
  out.reserved_bytes = regions.reserved_bytes();
  out.peak_reserved_bytes = regions.peak_reserved_bytes();
  out.free_regions = regions.free_regions();
  out.largest_free_run = regions.largest_free_run();
  out.jobs = job_count_.load();
  out.invalid_frees = invalid_frees_.load();
  return out;
}

job_stats device_pool::stats(job_id job) const {
  return arena(job).stats();
}

std::string device_pool::job_name(job_id job) const {
  return arena(job).name();
}

void device_pool::set_pressure_relief(job_id job, pressure_relief* relief) {
  arena(job).set_relief(relief);
}

void device_pool::clear_pressure_relief(job_id job, pressure_relief* relief) {
  arena(job).clear_relief(relief);
}

pressure_relief* device_pool::pressure_relief_of(job_id job) {
  return arena(job).relief();
}

void device_pool::set_borrow_gate(borrow_gate* gate) {
  context_->gate.store(gate, std::memory_order_release);
}

void device_pool::set_trace_sink(trace_sink* sink) {
  context_->sink.store(sink, std::memory_order_release);
}

void device_pool::set_diagnostic_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard lock(diagnostic_mutex_);
  diagnostic_ = std::move(handler);
}

void device_pool::report(const std::string& message) noexcept {
  try {
    std::lock_guard lock(diagnostic_mutex_);
    if (diagnostic_) diagnostic_(message);
  } catch (...) {
    // A failing handler must not turn a free into a crash.
  }
}

oom_report device_pool::make_report(const detail::job_arena& owner, std::size_t bytes,
                                    alloc_kind kind) const {
  const auto job = owner.stats();
  const auto& regions = context_->region_supply;
  oom_report out;
  out.job_name = owner.name();
  out.job = owner.id();
  out.requested_bytes = bytes;
  out.kind = kind;
  out.job_live_bytes = job.live_bytes;
  out.job_reserved_bytes = job.reserved_bytes;
  out.job_unsynced_bytes = job.unsynced_bytes;
  out.job_limit = owner.limit();
  out.pool_reserved_bytes = regions.reserved_bytes();
  out.free_regions = regions.free_regions();
  out.largest_free_run_bytes = regions.largest_free_run() * regions.region_size();
  out.budget = regions.budget();
  out.capacity = regions.capacity();
  out.region_size = regions.region_size();
  return out;
}

}  // namespace tandem::memory
