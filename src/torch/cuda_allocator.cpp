#include "tandem/torch/cuda_allocator.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/cuda_backend.hpp"
#include "tandem/memory/region_pool.hpp"
#include "tandem/torch/job_binding.hpp"

namespace tandem::torch_support {

namespace {

// libtorch's allocator is process-wide, so this state is too. The hooks only read atomics:
// libtorch calls them from every job's thread and from the autograd thread that all jobs share,
// where waiting on a lock of ours would stall every job. Writers (install, bind and their undoing)
// are serialised by state_mutex, which the hooks never take.

struct stream_slot {
  // A slot is published by storing `native` last and read by loading it first, so a reader that
  // finds its key also sees the binding stored with it. nullptr marks a free slot; no stream of a
  // cuda_backend has that handle (it is the default stream's).
  std::atomic<void*> native{nullptr};
  std::atomic<const cuda_job_stream_binding*> binding{nullptr};
};

constinit std::array<stream_slot, max_registered_cuda_streams> registered_streams{};
// Slots at or past this index have never been used; lookups stop here.
constinit std::atomic<std::size_t> registered_streams_end{0};
constinit std::array<std::atomic<memory::device_pool*>, max_installed_cuda_pools> installed_pools{};
constinit std::array<int, max_installed_cuda_pools> installed_pool_devices{};  // by state_mutex
constinit std::mutex state_mutex;
constinit bool replaced_libtorch_allocator = false;  // guarded by state_mutex

constexpr std::size_t not_found = ~std::size_t{0};

const cuda_job_stream_binding* find_binding(void* native) noexcept {
  if (native == nullptr) return nullptr;
  const auto end = registered_streams_end.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < end; ++i) {
    const auto& slot = registered_streams[i];
    if (slot.native.load(std::memory_order_acquire) != native) continue;
    const auto* found = slot.binding.load(std::memory_order_acquire);
    if (found != nullptr && found->native_stream() == native) return found;
  }
  return nullptr;
}

std::size_t registered_count() noexcept {
  std::size_t count = 0;
  const auto end = registered_streams_end.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < end; ++i) {
    if (registered_streams[i].native.load(std::memory_order_acquire) != nullptr) ++count;
  }
  return count;
}

std::size_t installed_index(const memory::device_pool& pool) noexcept {
  for (std::size_t i = 0; i < installed_pools.size(); ++i) {
    if (installed_pools[i].load(std::memory_order_acquire) == &pool) return i;
  }
  return not_found;
}

std::string hex_text(const void* ptr) {
  const auto value = reinterpret_cast<std::uintptr_t>(ptr);
  std::array<char, 2 * sizeof(value)> digits{};
  const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), value, 16);
  return "0x" + std::string(digits.data(), written.ptr);
}

/// The handle, and the meaning of the ones CUDA reserves: those are the streams a job forgets to
/// leave.
std::string stream_text(const void* native) {
  std::string text = hex_text(native);
  // 0 is libtorch's default stream of each device; 1 and 2 are the values of cudaStreamLegacy
  // and cudaStreamPerThread, whose macros would bring C casts into this file.
  switch (reinterpret_cast<std::uintptr_t>(native)) {
    case 0:
      return text + " (the default stream)";
    case 1:
      return text + " (cudaStreamLegacy, the legacy default stream)";
    case 2:
      return text + " (cudaStreamPerThread, the per-thread default stream)";
    default:
      return text;
  }
}

std::string job_text(const cuda_job_stream_binding& owner) {
  return "job '" + owner.pool().job_name(owner.job()) + "'";
}

memory::alloc_kind kind_for(const cuda_job_stream_binding& owner) noexcept {
  const binding* thread = current_binding();
  if (thread != nullptr && thread->pool == &owner.pool() && thread->job == owner.job()) {
    return thread->kind;
  }
  return memory::alloc_kind::unknown;
}

// The hooks below are libtorch's view of the pool. alloc_fn gets the stream that is current on
// the allocating thread, free_fn the stream of the allocation.

void* allocate_on_job_stream(std::size_t bytes, int device, cudaStream_t native) {
  if (bytes == 0) return nullptr;  // as libtorch's own allocator: no memory, no owner needed
  const cuda_job_stream_binding* owner = find_binding(native);
  TANDEM_EXPECTS(owner != nullptr, usage_error,
                 "libtorch asked for " + format_bytes(bytes) +
                     " on cuda:" + std::to_string(device) + " on stream " + stream_text(native) +
                     ", which no job registered (" + std::to_string(registered_count()) +
                     " streams are registered). tandem serves CUDA tensors only on jobs' streams "
                     "and never falls back to cudaMalloc, so that the budget holds: run the work "
                     "on a job's stream, holding a cuda_job_stream_binding for it and a "
                     "c10::cuda::CUDAStreamGuard on torch_stream(binding)");
  TANDEM_EXPECTS(owner->device() == device, usage_error,
                 "stream " + stream_text(native) + " of " + job_text(*owner) +
                     " belongs to its pool's device cuda:" + std::to_string(owner->device()) +
                     " but libtorch allocates on cuda:" + std::to_string(device) +
                     "; make it current through torch_stream(binding), which names its device");
  TANDEM_EXPECTS(installed_index(owner->pool()) != not_found, usage_error,
                 "stream " + stream_text(native) + " of " + job_text(*owner) +
                     " is still registered but its pool was uninstalled; drop the job's "
                     "bindings before uninstall_cuda_allocator");
  // Before taking memory for this operation, let the device catch up to the in-flight limit.
  if (auto* limiter = owner->inflight(); limiter != nullptr) {
    static_cast<void>(limiter->mark(owner->stream()));
  }
  return owner->pool().allocate(owner->job(), owner->stream(), bytes, kind_for(*owner));
}

void free_into_owner(void* ptr, std::size_t bytes, int /*device*/,
                     cudaStream_t /*allocation_stream*/) noexcept {
  if (ptr == nullptr) return;
  for (const auto& installed : installed_pools) {
    memory::device_pool* pool = installed.load(std::memory_order_acquire);
    if (pool == nullptr || !pool->owns(ptr)) continue;
    // The owner comes from the pointer, not from the stream: the tensor may outlive the binding.
    // No owner means a free region, which deallocate refuses and reports, leaving the pool intact.
    pool->deallocate(pool->owner_of(ptr).value_or(memory::no_job), ptr);
    return;
  }
  std::fprintf(stderr,
               "tandem: libtorch freed a CUDA tensor (%zu bytes at %p) that no installed pool "
               "holds; its pool was uninstalled while the tensor lived, so its memory leaked\n",
               bytes, ptr);
}

void record_stream_in_pool(void* ptr, cudaStream_t native) {
  if (ptr == nullptr) return;  // an empty tensor holds no memory to protect
  const cuda_job_stream_binding* user = find_binding(native);
  TANDEM_EXPECTS(user != nullptr, usage_error,
                 "record_stream: the tensor at " + hex_text(ptr) + " is to be used on stream " +
                     stream_text(native) +
                     ", which no job registered; register it for the job (a job may hold "
                     "cuda_job_stream_bindings for several streams) so that the pool can keep the "
                     "tensor's memory until that stream's work is done");
  memory::device_pool& pool = user->pool();
  const auto owner = pool.owner_of(ptr);
  TANDEM_EXPECTS(owner.has_value(), usage_error,
                 "record_stream: the tensor at " + hex_text(ptr) + " is not in the pool of " +
                     job_text(*user) + ", whose stream " + stream_text(native) +
                     " it is to be used on; record a tensor only on streams of its own pool");
  pool.record_stream(*owner, ptr, user->stream());
}

/// The device the pool's memory is on, which libtorch names in each request.
int device_of(const memory::device_pool& pool) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, pool.base());
  if (status != cudaSuccess) static_cast<void>(cudaGetLastError());  // not sticky; clear it
  TANDEM_EXPECTS(status == cudaSuccess && attributes.type == cudaMemoryTypeDevice, device_error,
                 "cannot tell which CUDA device the pool's memory is on (" +
                     std::string(cudaGetErrorString(status)) +
                     "); make the pool on a cuda_backend and check the device with nvidia-smi");
  return attributes.device;
}

void replace_libtorch_allocator() {
  namespace pluggable = torch::cuda::CUDAPluggableAllocator;
  auto* current = c10::cuda::CUDACachingAllocator::get();
  TANDEM_EXPECTS(current == nullptr || !current->initialized(), usage_error,
                 "install_cuda_allocator: libtorch's CUDA allocator is initialised already "
                 "(libtorch does that at its first CUDA tensor, stream or generator), so memory "
                 "outside the pool's budget may be in use and libtorch will not swap allocators; "
                 "install the pool before the process's first CUDA work in libtorch");
  auto allocator = pluggable::createCustomAllocator(&allocate_on_job_stream, &free_into_owner);
  // createCustomAllocator makes a CUDAPluggableAllocator, the one type with a record_stream hook.
  std::static_pointer_cast<pluggable::CUDAPluggableAllocator>(allocator)->set_record_stream_fn(
      &record_stream_in_pool);
  pluggable::changeCurrentAllocator(allocator);
}

}  // namespace

void install_cuda_allocator(memory::device_pool& pool) {
  const std::lock_guard lock(state_mutex);
  TANDEM_EXPECTS(pool.backend().kind() == device::backend_kind::cuda, usage_error,
                 std::string("install_cuda_allocator: the pool lives on the ") +
                     device::to_string(pool.backend().kind()) +
                     " backend; libtorch's CUDA tensors need a pool made on a cuda_backend");
  TANDEM_EXPECTS(installed_index(pool) == not_found, usage_error,
                 "install_cuda_allocator: this pool is installed already");
  const int device = device_of(pool);
  std::size_t free_index = not_found;
  for (std::size_t i = 0; i < installed_pools.size() && free_index == not_found; ++i) {
    if (installed_pools[i].load(std::memory_order_relaxed) == nullptr) free_index = i;
  }
  TANDEM_EXPECTS(free_index != not_found, usage_error,
                 "install_cuda_allocator: " + std::to_string(max_installed_cuda_pools) +
                     " pools are installed already; uninstall those that are done");
  if (!replaced_libtorch_allocator) {
    replace_libtorch_allocator();
    replaced_libtorch_allocator = true;
  }
  installed_pool_devices[free_index] = device;
  installed_pools[free_index].store(&pool, std::memory_order_release);
}

void uninstall_cuda_allocator(memory::device_pool& pool) noexcept {
  const std::lock_guard lock(state_mutex);
  const auto index = installed_index(pool);
  if (index == not_found) return;
  std::size_t bound_streams = 0;
  const auto end = registered_streams_end.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < end; ++i) {
    const auto* bound = registered_streams[i].binding.load(std::memory_order_acquire);
    if (bound != nullptr && &bound->pool() == &pool) ++bound_streams;
  }
  if (bound_streams > 0) {
    std::fprintf(stderr,
                 "tandem: uninstalling a CUDA pool while %zu of its jobs' streams are still "
                 "registered; allocations on them fail from now on\n",
                 bound_streams);
  }
  try {
    if (const auto live = pool.stats().live_bytes; live > 0) {
      std::fprintf(stderr,
                   "tandem: uninstalling a CUDA pool that still holds %s of tensors; they leak "
                   "(libtorch's cuBLAS workspaces among them, unless release_cublas_workspaces "
                   "ran)\n",
                   format_bytes(live).c_str());
    }
  } catch (const std::exception&) {
    // Only the report is lost.
  }
  installed_pools[index].store(nullptr, std::memory_order_release);
}

cuda_job_stream_binding::cuda_job_stream_binding(memory::device_pool& pool, memory::job_id job,
                                                 device::stream& stream, std::size_t inflight_limit)
    : inflight_(inflight_limit > 0 ? std::make_unique<device::inflight_limiter>(inflight_limit)
                                   : nullptr),
      pool_(&pool),
      job_(job),
      stream_(&stream),
      native_(device::native_handle(stream)) {
  (void)pool.stats(job);  // throws usage_error for a job the pool does not know
  const std::lock_guard lock(state_mutex);
  const auto pool_index = installed_index(pool);
  TANDEM_EXPECTS(pool_index != not_found, usage_error,
                 "cannot register stream '" + stream.name() + "' for job '" + pool.job_name(job) +
                     "': its pool is not installed as libtorch's CUDA allocator; call "
                     "install_cuda_allocator(pool) first");
  device_ = installed_pool_devices[pool_index];
  if (const auto* holder = find_binding(native_); holder != nullptr) {
    TANDEM_FAIL(usage_error, "cannot register stream '" + stream.name() + "' for job '" +
                                 pool.job_name(job) + "': it is registered for " +
                                 job_text(*holder) +
                                 " already; a stream belongs to one job, so give each job "
                                 "streams of its own");
  }
  const auto end = registered_streams_end.load(std::memory_order_relaxed);
  std::size_t index = end;
  for (std::size_t i = 0; i < end && index == end; ++i) {
    if (registered_streams[i].native.load(std::memory_order_relaxed) == nullptr) index = i;
  }
  TANDEM_EXPECTS(index < registered_streams.size(), usage_error,
                 "cannot register stream '" + stream.name() +
                     "': " + std::to_string(max_registered_cuda_streams) +
                     " streams are registered already; drop the bindings of finished jobs");
  registered_streams[index].binding.store(this, std::memory_order_relaxed);
  registered_streams[index].native.store(native_, std::memory_order_release);
  if (index == end) registered_streams_end.store(end + 1, std::memory_order_release);
}

cuda_job_stream_binding::~cuda_job_stream_binding() {
  const std::lock_guard lock(state_mutex);
  const auto end = registered_streams_end.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < end; ++i) {
    auto& slot = registered_streams[i];
    if (slot.binding.load(std::memory_order_relaxed) != this) continue;
    slot.native.store(nullptr, std::memory_order_release);
    slot.binding.store(nullptr, std::memory_order_release);
    return;
  }
}

void release_cublas_workspaces() {
  at::cuda::clearCublasWorkspaces();
}

c10::cuda::CUDAStream torch_stream(const cuda_job_stream_binding& binding) {
  return c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(binding.native_stream()),
                                          static_cast<c10::DeviceIndex>(binding.device()));
}

}  // namespace tandem::torch_support
