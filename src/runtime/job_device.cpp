#include "job_device.hpp"

#include <utility>

#include "tandem/common/error.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/torch/cpu_allocator.hpp"

namespace tandem::runtime::detail {

namespace {

/// CPU: the job's thread runs its operations; its job_binding does the rest.
class cpu_job_device final : public job_device {
 public:
  [[nodiscard]] c10::Device torch_device() const override { return c10::Device(c10::kCPU); }
  [[nodiscard]] c10::optional<c10::Stream> torch_stream() const override { return c10::nullopt; }
};

[[noreturn]] void no_cuda_training() {
  throw config_error(
      "device kind \"cuda\": this build trains on the CPU backend only (its libtorch has no "
      "CUDA); set kind = \"cpu\", or build tandem against a CUDA libtorch (scripts/gpu-check.sh "
      "shows how)");
}

}  // namespace

std::unique_ptr<device::backend> make_training_backend(const device_spec& device,
                                                       double copy_bandwidth) {
  if (device.kind == device::backend_kind::cpu) {
    return std::make_unique<device::cpu_backend>(
        device::cpu_backend_options{.memory_limit = 0, .copy_bandwidth = copy_bandwidth});
  }
#if defined(TANDEM_HAVE_TORCH_CUDA)
  return make_cuda_backend(device);
#else
  no_cuda_training();
#endif
}

std::shared_ptr<void> install_torch_allocator(memory::device_pool& pool) {
  if (pool.backend().kind() == device::backend_kind::cpu) {
    return std::make_shared<torch_support::cpu_allocator_scope>(pool);
  }
#if defined(TANDEM_HAVE_TORCH_CUDA)
  return install_cuda_pool(pool);
#else
  no_cuda_training();
#endif
}

std::unique_ptr<job_device> make_job_device(memory::device_pool& pool, memory::job_id job,
                                            device::stream& stream, std::size_t inflight_limit) {
  if (pool.backend().kind() == device::backend_kind::cpu) {
    return std::make_unique<cpu_job_device>();
  }
#if defined(TANDEM_HAVE_TORCH_CUDA)
  return make_cuda_job_device(pool, job, stream, inflight_limit);
#else
  static_cast<void>(job);
  static_cast<void>(stream);
  static_cast<void>(inflight_limit);
  no_cuda_training();
#endif
}

void retired_streams::keep(std::unique_ptr<device::stream> stream) {
  std::lock_guard lock(mutex_);
  streams_.push_back(std::move(stream));
}

void retired_streams::release() {
  std::lock_guard lock(mutex_);
  if (streams_.empty()) return;
#if defined(TANDEM_HAVE_TORCH_CUDA)
  release_cuda_workspaces();
#endif
  streams_.clear();
}

}  // namespace tandem::runtime::detail
