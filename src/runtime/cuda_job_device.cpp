// The CUDA halves of job_device.hpp. Built into tandem where libtorch has CUDA; elsewhere only
// compiled, against the CUDA headers of Debian's libtorch (src/CMakeLists.txt).

#include <c10/cuda/CUDAStream.h>

#include <memory>
#include <optional>

#include "job_device.hpp"
#include "tandem/device/cuda_backend.hpp"
#include "tandem/torch/cuda_allocator.hpp"

namespace tandem::runtime::detail {

namespace {

/// The job's stream registered with the pool's allocator for the job's life, and the same
/// stream as libtorch's object, which the job's threads make current.
class cuda_job_device final : public job_device {
 public:
  cuda_job_device(memory::device_pool& pool, memory::job_id job, device::stream& stream,
                  std::size_t inflight_limit)
      : binding_(pool, job, stream, inflight_limit),
        stream_(torch_support::torch_stream(binding_)) {}

  [[nodiscard]] c10::Device torch_device() const override { return stream_.device(); }
  [[nodiscard]] c10::optional<c10::Stream> torch_stream() const override {
    return stream_.unwrap();
  }

 private:
  torch_support::cuda_job_stream_binding binding_;
  c10::cuda::CUDAStream stream_;
};

}  // namespace

std::unique_ptr<device::backend> make_cuda_backend(const device_spec& device) {
  return std::make_unique<device::cuda_backend>(
      device::cuda_backend_options{.device = device.index});
}

std::shared_ptr<void> install_cuda_pool(memory::device_pool& pool) {
  return std::make_shared<torch_support::cuda_allocator_scope>(pool);
}

std::unique_ptr<job_device> make_cuda_job_device(memory::device_pool& pool, memory::job_id job,
                                                 device::stream& stream,
                                                 std::size_t inflight_limit) {
  return std::make_unique<cuda_job_device>(pool, job, stream, inflight_limit);
}

void release_cuda_workspaces() {
  torch_support::release_cublas_workspaces();
}

}  // namespace tandem::runtime::detail
