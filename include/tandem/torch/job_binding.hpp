#pragma once
// Which job a thread's libtorch allocations belong to. A job's thread holds a job_binding while
// it trains; every tensor libtorch allocates on that thread then lands in the pool under the job,
// on the job's stream, with the kind of the innermost kind_scope, or, when the binding has a
// tensor_classifier, the kind it learned for that allocation (the scope's kind as its fallback).

#include "tandem/device/stream.hpp"
#include "tandem/memory/alloc_kind.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/memory/tensor_classifier.hpp"
#include "tandem/torch/job_thread_scope.hpp"

namespace tandem::torch_support {

/// Runs on the bound thread before each of its allocations goes to the pool: where the runtime
/// waits at a NodeGroup boundary (the job's own thread, the allocating side). May block; an
/// exception fails the allocation with it.
class allocation_hook {
 public:
  virtual ~allocation_hook() = default;
  virtual void before_allocation(std::size_t bytes) = 0;
  /// The allocation the last before_allocation announced did not happen: the pool refused it
  /// (a prefetch put off, memory::no_wait_scope), so a hook that counts allocations takes it
  /// back.
  virtual void allocation_refused() noexcept {}
};

struct binding {
  memory::device_pool* pool = nullptr;
  memory::job_id job = 0;
  device::stream* stream = nullptr;
  memory::alloc_kind kind = memory::alloc_kind::unknown;
  /// Learns kinds from the job's allocations and frees; nullptr: the kind_scope decides alone.
  memory::tensor_classifier* classifier = nullptr;
  allocation_hook* hook = nullptr;  ///< nullptr: none
};

/// The calling thread's binding, or nullptr when its allocations do not belong to a job.
[[nodiscard]] const binding* current_binding() noexcept;

/// Binds the calling thread to (pool, job, stream) for its lifetime; restores the previous
/// binding when destroyed, so bindings nest. Not movable: it lives on the thread's stack.
/// A `classifier` and a `hook` must outlive the binding and be used by this thread only while
/// bound.
class job_binding {
 public:
  job_binding(memory::device_pool& pool, memory::job_id job, device::stream& stream,
              memory::tensor_classifier* classifier = nullptr, allocation_hook* hook = nullptr);
  ~job_binding();
  job_binding(const job_binding&) = delete;
  job_binding& operator=(const job_binding&) = delete;

 private:
  binding previous_;
  bool had_previous_;
  job_thread_scope job_thread_;
};

/// Within a job_binding, tags the thread's allocations with `kind` (e.g. persistent while the
/// model and optimizer state are built); restores the previous kind when destroyed.
class kind_scope {
 public:
  explicit kind_scope(memory::alloc_kind kind);
  ~kind_scope();
  kind_scope(const kind_scope&) = delete;
  kind_scope& operator=(const kind_scope&) = delete;

 private:
  memory::alloc_kind previous_;
};

}  // namespace tandem::torch_support
