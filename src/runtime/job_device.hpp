#pragma once
// The device a run trains on, in the parts that differ between the CPU backend and a CUDA GPU:
// the backend, how the pool becomes libtorch's allocator, and where each job's libtorch work
// runs. Everything else (pool, policy, gate, monitor) is the same code for both.
//
// On the CPU backend a job's operations run on its own thread as they are issued, and the
// thread's job_binding routes its allocations to the pool (torch/cpu_allocator.hpp). On a CUDA
// device they are queued on the job's own CUDA stream, which the pool's CUDA allocator maps to
// the job (torch/cuda_allocator.hpp): the job's threads make that stream current, and libtorch's
// autograd thread, shared by every job, runs each backward pass on its forward pass's stream.
//
// The CUDA halves live in cuda_job_device.cpp, which builds into tandem where libtorch has CUDA
// and is compiled (not linked) against Debian's CPU-only libtorch headers everywhere else, so
// that CI without a GPU still compiles it (src/CMakeLists.txt, tandem_cuda_compile_check).

#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <c10/util/Optional.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "tandem/device/backend.hpp"
#include "tandem/device/stream.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/runtime/workload.hpp"

namespace tandem::runtime::detail {

/// The libtorch device of `device`: cpu, or cuda:index.
[[nodiscard]] inline c10::Device torch_device_of(const device_spec& device) {
  if (device.kind == device::backend_kind::cpu) return c10::Device(c10::kCPU);
  return {c10::kCUDA, static_cast<c10::DeviceIndex>(device.index)};
}

/// Where one job's tensors live and which stream its work runs on.
class job_device {
 public:
  virtual ~job_device() = default;
  /// Where the job's model, batches and optimizer state go.
  [[nodiscard]] virtual c10::Device torch_device() const = 0;
  /// The stream the job's libtorch work must run on, for a c10::OptionalStreamGuard on each of
  /// the job's threads; none on the CPU backend.
  [[nodiscard]] virtual c10::optional<c10::Stream> torch_stream() const = 0;
};

/// The backend `device` names: the CPU backend with `copy_bandwidth` (bytes/s, 0: memcpy), or
/// CUDA device `device.index`. Throws config_error when this build cannot train on CUDA, and
/// device_error when the GPU cannot be used.
[[nodiscard]] std::unique_ptr<device::backend> make_training_backend(const device_spec& device,
                                                                     double copy_bandwidth);

/// Makes `pool` libtorch's allocator for its backend's device (CPU or CUDA) until the result is
/// destroyed. Throws usage_error when another pool holds it.
[[nodiscard]] std::shared_ptr<void> install_torch_allocator(memory::device_pool& pool);

/// Job `job`'s device, its work on `stream` (of the pool's backend). On CUDA the stream is
/// registered as the job's with the pool's allocator, under Zico's `inflight_limit` (0: none),
/// until the result is destroyed: after the job's tensors, before the stream.
[[nodiscard]] std::unique_ptr<job_device> make_job_device(memory::device_pool& pool,
                                                          memory::job_id job,
                                                          device::stream& stream,
                                                          std::size_t inflight_limit);

/// The streams of jobs that left a CUDA device, kept until the device goes. libtorch caches a
/// cuBLAS workspace per (handle, stream) for the life of the process and frees none while jobs
/// run (cuda_allocator.hpp): a stream destroyed early could hand its handle value, and with it
/// the departed job's workspace, to a job that comes later.
class retired_streams {
 public:
  void keep(std::unique_ptr<device::stream> stream);
  /// Frees the cached cuBLAS workspaces, then the streams; call once no job runs.
  void release();

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<device::stream>> streams_;
};

#if defined(TANDEM_HAVE_TORCH_CUDA)
// cuda_job_device.cpp
[[nodiscard]] std::unique_ptr<device::backend> make_cuda_backend(const device_spec& device);
[[nodiscard]] std::shared_ptr<void> install_cuda_pool(memory::device_pool& pool);
[[nodiscard]] std::unique_ptr<job_device> make_cuda_job_device(memory::device_pool& pool,
                                                               memory::job_id job,
                                                               device::stream& stream,
                                                               std::size_t inflight_limit);
void release_cuda_workspaces();
#endif

}  // namespace tandem::runtime::detail
