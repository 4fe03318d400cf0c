#include "tandem/device/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/detail/stream_ids.hpp"

namespace tandem::device {

namespace {

/// Turns a CUDA status into device_error naming the call.
void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so that later calls are not blamed for it
  throw device_error(tandem::detail::located(file, line,
                                             std::string("CUDA call ") + call +
                                                 " failed: " + cudaGetErrorString(status) +
                                                 "; check the device (nvidia-smi) and the driver"));
}
#define TANDEM_CUDA(call) check((call), #call, __FILE__, __LINE__)

/// For destructors, which must not throw.
void log_failure(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "tandem: %s failed while releasing: %s\n", call,
                 cudaGetErrorString(status));
  }
}

class cuda_event final : public event {
 public:
  explicit cuda_event(cudaEvent_t handle) : handle_(handle) {}
  ~cuda_event() override { log_failure(cudaEventDestroy(handle_), "cudaEventDestroy"); }
  [[nodiscard]] bool query() const override {
    const auto status = cudaEventQuery(handle_);
    if (status == cudaErrorNotReady) return false;
    TANDEM_CUDA(status);
    return true;
  }
  void synchronize() const override { TANDEM_CUDA(cudaEventSynchronize(handle_)); }
  [[nodiscard]] cudaEvent_t handle() const { return handle_; }

 private:
  cudaEvent_t handle_;
};

class cuda_reservation final : public reservation {
 public:
  cuda_reservation(std::byte* base, std::size_t size, int device)
      : reservation(base, size), device_(device) {}
  ~cuda_reservation() override {
    log_failure(cudaSetDevice(device_), "cudaSetDevice");
    log_failure(cudaFree(base()), "cudaFree");
  }

 private:
  int device_;
};

class cuda_host_buffer final : public host_buffer {
 public:
  cuda_host_buffer(std::byte* data, std::size_t size) : host_buffer(data, size) {}
  ~cuda_host_buffer() override { log_failure(cudaFreeHost(data()), "cudaFreeHost"); }
};

/// Errors of host functions, rethrown by the stream's next synchronize().
struct host_errors {
  std::mutex mutex;
  std::exception_ptr first;  // guarded by mutex
};

struct host_call {
  std::function<void()> fn;
  std::shared_ptr<host_errors> errors;
};

void run_host_call(void* data) {
  std::unique_ptr<host_call> call(static_cast<host_call*>(data));
  try {
    call->fn();
  } catch (...) {
    std::lock_guard lock(call->errors->mutex);
    if (!call->errors->first) call->errors->first = std::current_exception();
  }
}

}  // namespace

struct detail::cuda_backend_state {
  int device = 0;
  std::string name;
  std::size_t total = 0;
  stream_ids ids;
};

namespace {

class cuda_stream final : public stream {
 public:
  cuda_stream(std::shared_ptr<detail::cuda_backend_state> owner, std::uint32_t id, std::string name,
              stream_kind kind)
      : stream(id, std::move(name), kind), owner_(std::move(owner)) {
    TANDEM_CUDA(cudaSetDevice(owner_->device));
    TANDEM_CUDA(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
  }
  ~cuda_stream() override {
    log_failure(cudaStreamSynchronize(handle_), "cudaStreamSynchronize");
    log_failure(cudaStreamDestroy(handle_), "cudaStreamDestroy");
    owner_->ids.give_back(id());
  }

  event_ptr record() override {
    cudaEvent_t handle = nullptr;
    TANDEM_CUDA(cudaEventCreateWithFlags(&handle, cudaEventDisableTiming));
    auto recorded = std::make_shared<cuda_event>(handle);
    TANDEM_CUDA(cudaEventRecord(handle, handle_));
    return recorded;
  }

  void wait(event_ptr done) override {
    TANDEM_EXPECTS(done != nullptr, usage_error, "stream::wait needs an event, got null");
    const auto* cuda_done = dynamic_cast<const cuda_event*>(done.get());
    TANDEM_EXPECTS(cuda_done != nullptr, usage_error,
                   "stream::wait: the event was not recorded by the CUDA backend");
    // CUDA captures the event's state at this call, so the event may be released afterwards.
    TANDEM_CUDA(cudaStreamWaitEvent(handle_, cuda_done->handle(), 0));
  }

  void synchronize() override {
    TANDEM_CUDA(cudaStreamSynchronize(handle_));
    std::exception_ptr failure;
    {
      std::lock_guard lock(errors_->mutex);
      std::swap(failure, errors_->first);
    }
    if (failure) std::rethrow_exception(failure);
  }

  void memset_async(void* dst, int value, std::size_t bytes) override {
    TANDEM_CUDA(cudaMemsetAsync(dst, value, bytes, handle_));
  }

  void copy_async(void* dst, const void* src, std::size_t bytes) override {
    TANDEM_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, handle_));
  }

  void launch_host(std::function<void()> fn) override {
    TANDEM_EXPECTS(fn != nullptr, usage_error, "launch_host needs a function, got an empty one");
    auto call = std::make_unique<host_call>(host_call{std::move(fn), errors_});
    TANDEM_CUDA(cudaLaunchHostFunc(handle_, run_host_call, call.get()));
    call.release();  // run_host_call owns it now
  }

 private:
  std::shared_ptr<detail::cuda_backend_state> owner_;
  std::shared_ptr<host_errors> errors_ = std::make_shared<host_errors>();
  cudaStream_t handle_ = nullptr;
};

}  // namespace

bool cuda_backend::available(std::string* why) {
  int count = 0;
  const auto status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    if (why != nullptr) {
      *why = status != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorString(status)
                                   : std::string("no CUDA device present");
    }
    cudaGetLastError();
    return false;
  }
  return true;
}

cuda_backend::cuda_backend(cuda_backend_options options)
    : state_(std::make_shared<detail::cuda_backend_state>()) {
  std::string why;
  TANDEM_EXPECTS(available(&why), device_error,
                 "cannot use the CUDA backend: " + why + "; use the cpu backend on this machine");
  int count = 0;
  TANDEM_CUDA(cudaGetDeviceCount(&count));
  TANDEM_EXPECTS(options.device >= 0 && options.device < count, config_error,
                 "CUDA device " + std::to_string(options.device) +
                     " does not exist; this machine has " + std::to_string(count));
  state_->device = options.device;
  TANDEM_CUDA(cudaSetDevice(options.device));
  cudaDeviceProp properties{};
  TANDEM_CUDA(cudaGetDeviceProperties(&properties, options.device));
  state_->name = properties.name;
  std::size_t free_bytes = 0;
  TANDEM_CUDA(cudaMemGetInfo(&free_bytes, &state_->total));
}

cuda_backend::~cuda_backend() = default;

std::string cuda_backend::describe() const {
  return "cuda:" + std::to_string(state_->device) + " " + state_->name + " (" +
         format_bytes(state_->total) + ")";
}

std::size_t cuda_backend::total_memory() const {
  return state_->total;
}

std::unique_ptr<reservation> cuda_backend::reserve(std::size_t bytes) {
  TANDEM_EXPECTS(bytes > 0, usage_error, "cannot reserve 0 bytes of device memory");
  TANDEM_CUDA(cudaSetDevice(state_->device));
  void* base = nullptr;
  const auto status = cudaMalloc(&base, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_bytes = 0;
    std::size_t total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    TANDEM_FAIL(device_error, "cudaMalloc of " + format_bytes(bytes) + " failed (" +
                                  cudaGetErrorString(status) + "); the device has " +
                                  format_bytes(free_bytes) + " free of " + format_bytes(total) +
                                  "; lower the pool capacity");
  }
  return std::make_unique<cuda_reservation>(static_cast<std::byte*>(base), bytes, state_->device);
}

std::unique_ptr<stream> cuda_backend::create_stream(std::string name, stream_kind kind) {
  const auto id = state_->ids.take();
  try {
    return std::make_unique<cuda_stream>(state_, id, std::move(name), kind);
  } catch (...) {
    state_->ids.give_back(id);
    throw;
  }
}

std::unique_ptr<host_buffer> cuda_backend::allocate_host(std::size_t bytes) {
  TANDEM_EXPECTS(bytes > 0, usage_error, "cannot allocate an empty host buffer");
  void* data = nullptr;
  TANDEM_CUDA(cudaMallocHost(&data, bytes));
  return std::make_unique<cuda_host_buffer>(static_cast<std::byte*>(data), bytes);
}

}  // namespace tandem::device
