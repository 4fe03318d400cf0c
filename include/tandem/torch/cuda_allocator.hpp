#pragma once
// libtorch's CUDA allocator replaced by the pool, through CUDAPluggableAllocator. Built only when
// the libtorch found is a CUDA build (2.x); TANDEM_HAVE_TORCH_CUDA then says so.
//
// Every CUDA tensor lands in the pool under the job that owns the stream it is allocated on: a
// job registers each of its streams with a cuda_job_stream_binding and runs its libtorch work on
// them (a c10::cuda::CUDAStreamGuard on torch_stream(binding)).
//
// Streams, not threads as for the CPU allocator, say whose work it is: libtorch runs the CUDA part
// of every backward on one autograd thread per device, shared by all jobs, but on the stream the
// forward ran on.
//
// Contract:
// - install_cuda_allocator before anything makes libtorch initialise CUDA (its first CUDA tensor,
//   stream or generator); afterwards it refuses with usage_error, because memory from libtorch's
//   caching allocator would escape the budget and libtorch cannot swap an allocator in use. The
//   replacement lasts for the process; uninstalling only detaches the pool.
// - An allocation on a stream no binding registered (the default stream, a side stream libtorch
//   made) fails with usage_error naming the stream. There is no fallback to cudaMalloc: the budget
//   is a hard guarantee. Empty tensors need no memory and so no registered stream.
// - A refused request reaches the allocating op as memory::out_of_memory_error.
// - A tensor is freed into the job owning its region, whatever thread or stream drops it, on the
//   stream it was allocated on (the pool's stream rules); frees need no binding.
// - tensor.record_stream(s) needs `s` registered too, by a job of the tensor's pool; the pool then
//   holds the memory until the work enqueued on `s` before the free is done.
// - The kind of an allocation is the calling thread's kind_scope when that thread holds a
//   job_binding for the same pool and job (the job's thread building its model), otherwise
//   alloc_kind::unknown (the autograd thread, for one).
// - Teardown order: tensors, bindings, uninstall, pool. A binding must not outlive its stream.
// - libtorch keeps one cuBLAS workspace per (handle, stream) for the life of the process, charged
//   to the job whose stream first ran cuBLAS: call release_cublas_workspaces() when no job runs
//   (see there) before removing a job or destroying a stream it used.
// - Not supported, as libtorch's pluggable allocator lacks them: CUDA graph memory pools and
//   libtorch's CUDA memory statistics (the pool's stats say more).
//
// Thread safety: install, uninstall and bindings may be made and dropped from any thread; the
// allocation hooks take no lock of their own (the registry is read lock-free), only the pool's.

#include <cstddef>
#include <memory>

#include "tandem/device/inflight_limiter.hpp"
#include "tandem/device/stream.hpp"
#include "tandem/memory/device_pool.hpp"

#if defined(TANDEM_HAVE_TORCH_CUDA)
#include <c10/cuda/CUDAStream.h>
#endif

namespace tandem::torch_support {

/// Streams registered at once, over all pools, at most.
inline constexpr std::size_t max_registered_cuda_streams = 4096;
/// Pools installed at once (one per device is the usual case), at most.
inline constexpr std::size_t max_installed_cuda_pools = 16;

/// Attaches `pool`, which must live on a cuda_backend, to libtorch's CUDA allocator; the first
/// call also replaces libtorch's allocator for the rest of the process. Throws usage_error when
/// libtorch's caching allocator was initialised already, when `pool` is installed already or
/// lives on another backend, and device_error when its device cannot be told.
void install_cuda_allocator(memory::device_pool& pool);

/// Detaches `pool`: allocations on its jobs' streams fail from now on. Call it once the pool's
/// tensors are gone; what is left is reported on stderr and leaks. Does nothing for a pool that
/// is not installed.
void uninstall_cuda_allocator(memory::device_pool& pool) noexcept;

/// RAII form of install/uninstall; declare it after the pool, so that it is dropped first.
class cuda_allocator_scope {
 public:
  explicit cuda_allocator_scope(memory::device_pool& pool) : pool_(pool) {
    install_cuda_allocator(pool);
  }
  ~cuda_allocator_scope() { uninstall_cuda_allocator(pool_); }
  cuda_allocator_scope(const cuda_allocator_scope&) = delete;
  cuda_allocator_scope& operator=(const cuda_allocator_scope&) = delete;

 private:
  memory::device_pool& pool_;
};

/// Registers `stream` (a stream of the pool's cuda_backend) as a stream of `job`: libtorch's CUDA
/// allocations on it go to `pool` under `job` for the binding's lifetime. A job may register
/// several streams (compute and copy); a stream belongs to one job. Throws usage_error when the
/// pool is not installed, the job unknown, the stream not a CUDA stream or registered already.
/// Not movable: the registry points at it.
///
/// `inflight_limit` > 0 applies Zico's in-flight limit (§6.1) to the stream: each allocation marks
/// the stream and waits while more than that many marks are pending on the device, so that memory
/// is taken at most that many allocating operations ahead of execution (device/inflight_limiter).
/// The wait happens on the allocating thread, which for the backward pass is libtorch's autograd
/// thread, shared by every job on the device: a job whose stream is behind slows the others'
/// backward passes too, as it would in libtorch's own queueing.
class cuda_job_stream_binding {
 public:
  cuda_job_stream_binding(memory::device_pool& pool, memory::job_id job, device::stream& stream,
                          std::size_t inflight_limit = 0);
  ~cuda_job_stream_binding();
  cuda_job_stream_binding(const cuda_job_stream_binding&) = delete;
  cuda_job_stream_binding& operator=(const cuda_job_stream_binding&) = delete;

  [[nodiscard]] memory::device_pool& pool() const { return *pool_; }
  [[nodiscard]] memory::job_id job() const { return job_; }
  [[nodiscard]] device::stream& stream() const { return *stream_; }
  /// The stream's cudaStream_t (device::native_handle).
  [[nodiscard]] void* native_stream() const { return native_; }
  /// The CUDA ordinal of the pool's device, which the stream must belong to.
  [[nodiscard]] int device() const { return device_; }
  /// The stream's in-flight limiter; nullptr when it has no limit.
  [[nodiscard]] device::inflight_limiter* inflight() const { return inflight_.get(); }

 private:
  std::unique_ptr<device::inflight_limiter> inflight_;
  memory::device_pool* pool_;
  memory::job_id job_;
  device::stream* stream_;
  void* native_;
  int device_ = -1;
};

/// Frees libtorch's cached cuBLAS workspaces (at::cuda::clearCublasWorkspaces) back to their
/// jobs. Otherwise they outlive their job, and a new stream that CUDA gives the handle value of a
/// destroyed one would be handed memory the pool has since given to another job. libtorch does
/// not lock that cache against concurrent cuBLAS calls: call it only while no job runs.
void release_cublas_workspaces();

#if defined(TANDEM_HAVE_TORCH_CUDA)
/// The binding's stream as libtorch's stream object, to make it current while the job's work
/// runs: `c10::cuda::CUDAStreamGuard on_job_stream(torch_stream(binding));`.
[[nodiscard]] c10::cuda::CUDAStream torch_stream(const cuda_job_stream_binding& binding);
#endif

}  // namespace tandem::torch_support
