#include "tandem/device/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/detail/stream_ids.hpp"

namespace tandem::device {

namespace {

constexpr const char* k_check_device =
    "check the device with nvidia-smi; after an illegal memory access or a device-side assert the "
    "CUDA context stays broken and the process must be restarted";
constexpr const char* k_check_pointers =
    "check that both ranges lie in device memory or pinned host memory of this process and that "
    "their sizes fit";

/// Throws device_error for a failed CUDA call. `call` is the call's source text; only the
/// function name is kept.
[[noreturn]] void fail(cudaError_t status, std::string_view call, const std::string& hint,
                       const char* file, int line) {
  // Non-sticky errors linger in cudaGetLastError; clear them so a later check is not blamed.
  static_cast<void>(cudaGetLastError());
  call = call.substr(0, call.find('('));
  throw tandem::detail::raised_at(
      device_error("CUDA call " + std::string(call) + " failed (" + cudaGetErrorName(status) +
                   ": " + cudaGetErrorString(status) + "); " + hint),
      file, line);
}

/// Runs `call` and throws device_error naming it, CUDA's reason and `hint` (evaluated only on
/// failure, so it may build a string) when it fails.
#define TANDEM_CUDA(call, hint)                                                                \
  do {                                                                                         \
    if (const cudaError_t tandem_status = (call); tandem_status != cudaSuccess) [[unlikely]] { \
      fail(tandem_status, #call, (hint), __FILE__, __LINE__);                                  \
    }                                                                                          \
  } while (false)

/// For destructors, which must not throw.
void log_failure(cudaError_t status, const char* call) noexcept {
  if (status == cudaSuccess) return;
  static_cast<void>(cudaGetLastError());
  // At process exit the runtime may be unloaded before static objects die; nothing is leaked.
  if (status == cudaErrorCudartUnloading) return;
  std::fprintf(stderr, "tandem: %s failed while releasing CUDA resources: %s (%s)\n", call,
               cudaGetErrorName(status), cudaGetErrorString(status));
}

/// Makes `device` the calling thread's current device for the scope and then restores the
/// caller's, so that jobs (or libtorch) driving other devices from this thread are unaffected.
class device_scope {
 public:
  explicit device_scope(int device) : device_(device) {
    TANDEM_CUDA(cudaGetDevice(&previous_), k_check_device);
    if (previous_ != device_) TANDEM_CUDA(cudaSetDevice(device_), k_check_device);
  }

  /// For destructors: logs instead of throwing, and then stays on whatever device is current.
  struct no_throw {};
  device_scope(int device, no_throw) noexcept : device_(device), previous_(device) {
    int current = device;
    if (const cudaError_t status = cudaGetDevice(&current); status != cudaSuccess) {
      log_failure(status, "cudaGetDevice");
      return;
    }
    if (current == device_) return;
    if (const cudaError_t status = cudaSetDevice(device_); status != cudaSuccess) {
      log_failure(status, "cudaSetDevice");
      return;
    }
    previous_ = current;
  }

  ~device_scope() {
    if (previous_ != device_) log_failure(cudaSetDevice(previous_), "cudaSetDevice");
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int device_;
  int previous_ = 0;
};

class cuda_event final : public event {
 public:
  /// Creates the event on the current device (that of the stream it will be recorded on).
  cuda_event() {
    TANDEM_CUDA(cudaEventCreateWithFlags(&handle_, cudaEventDisableTiming), k_check_device);
  }
  // A pending record keeps the CUDA event alive until it completes, so this never waits.
  ~cuda_event() override { log_failure(cudaEventDestroy(handle_), "cudaEventDestroy"); }
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;

  [[nodiscard]] bool query() const override {
    const cudaError_t status = cudaEventQuery(handle_);
    if (status == cudaErrorNotReady) return false;
    TANDEM_CUDA(status, k_check_device);
    return true;
  }

  void synchronize() const override { TANDEM_CUDA(cudaEventSynchronize(handle_), k_check_device); }

  [[nodiscard]] cudaEvent_t handle() const { return handle_; }

 private:
  cudaEvent_t handle_ = nullptr;
};

class cuda_reservation final : public reservation {
 public:
  cuda_reservation(std::byte* base, std::size_t size, int device)
      : reservation(base, size), device_(device) {}
  // cudaFree waits for the device's pending work, so no queued copy can touch freed memory.
  ~cuda_reservation() override {
    const device_scope scope(device_, device_scope::no_throw{});
    log_failure(cudaFree(base()), "cudaFree");
  }
  cuda_reservation(const cuda_reservation&) = delete;
  cuda_reservation& operator=(const cuda_reservation&) = delete;

 private:
  int device_;
};

class cuda_host_buffer final : public host_buffer {
 public:
  cuda_host_buffer(std::byte* data, std::size_t size) : host_buffer(data, size) {}
  ~cuda_host_buffer() override { log_failure(cudaFreeHost(data()), "cudaFreeHost"); }
  cuda_host_buffer(const cuda_host_buffer&) = delete;
  cuda_host_buffer& operator=(const cuda_host_buffer&) = delete;
};

/// The first exception a host function of one stream threw, kept for its next synchronize().
/// Shared with pending host calls, which may run after the stream object is gone.
struct host_errors {
  std::mutex mutex;
  std::exception_ptr first;  // guarded by mutex
};

/// One launch_host item: allocated on the heap, deleted by CUDA's host thread after it runs.
/// (CUDA skips host functions once the context is broken; those calls then leak, along with the
/// context itself.)
struct host_call {
  std::function<void()> fn;
  std::shared_ptr<host_errors> errors;

  static void run(void* self) noexcept {
    const std::unique_ptr<host_call> call(static_cast<host_call*>(self));
    try {
      call->fn();
    } catch (...) {
      // An exception must not unwind into the CUDA runtime's thread.
      const std::lock_guard lock(call->errors->mutex);
      if (!call->errors->first) call->errors->first = std::current_exception();
    }
  }
};

/// Reports an error that no synchronize() will rethrow any more. Never throws.
void log_dropped(const std::string& stream_name, const std::exception_ptr& failure) noexcept {
  try {
    std::string what = "an exception not derived from std::exception";
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr,
                 "tandem: stream '%s' destroyed before synchronize() reported its host function "
                 "error: %s\n",
                 stream_name.c_str(), what.c_str());
  } catch (...) {
    std::fputs("tandem: a stream was destroyed with an unreported host function error\n", stderr);
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

/// Copy streams are ordinary streams too: cudaMemcpyAsync picks the copy engine by itself, and a
/// separate stream is what lets a copy overlap compute. The kind is only stored.
class cuda_stream final : public stream {
 public:
  cuda_stream(std::shared_ptr<detail::cuda_backend_state> owner, std::uint32_t id, std::string name,
              stream_kind kind)
      : stream(id, std::move(name), kind), owner_(std::move(owner)) {
    const device_scope scope(owner_->device);
    // Non-blocking: jobs' streams must not serialise against the legacy default stream that
    // other libraries in the process may use.
    TANDEM_CUDA(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking), k_check_device);
  }

  ~cuda_stream() override {
    // Drain first, as the CPU backend's worker does, so that no queued work or host function
    // outlives the stream that its owner is about to consider finished.
    log_failure(cudaStreamSynchronize(handle_), "cudaStreamSynchronize");
    log_failure(cudaStreamDestroy(handle_), "cudaStreamDestroy");
    std::exception_ptr dropped;
    {
      const std::lock_guard lock(errors_->mutex);
      std::swap(dropped, errors_->first);
    }
    if (dropped) log_dropped(name(), dropped);
    owner_->ids.give_back(id());
  }

  event_ptr record() override {
    const device_scope scope(owner_->device);  // the event must live on the stream's device
    auto recorded = std::make_shared<const cuda_event>();
    TANDEM_CUDA(cudaEventRecord(recorded->handle(), handle_), k_check_device);
    return recorded;
  }

  void wait(event_ptr done) override {
    TANDEM_EXPECTS(done != nullptr, usage_error, "stream::wait needs an event, got null");
    const auto* recorded = dynamic_cast<const cuda_event*>(done.get());
    TANDEM_EXPECTS(recorded != nullptr, usage_error,
                   "stream::wait on CUDA stream '" + name() +
                       "': the event was not recorded by a CUDA backend; record it on a stream "
                       "of a cuda_backend");
    // cudaStreamWaitEvent captures the event's latest record at this call, and destroying an
    // event does not cancel waits already enqueued on it, so `done` may be dropped on return.
    TANDEM_CUDA(cudaStreamWaitEvent(handle_, recorded->handle(), 0), k_check_device);
  }

  void synchronize() override {
    TANDEM_CUDA(cudaStreamSynchronize(handle_), k_check_device);
    std::exception_ptr failure;
    {
      const std::lock_guard lock(errors_->mutex);
      std::swap(failure, errors_->first);
    }
    if (failure) std::rethrow_exception(failure);
  }

  void memset_async(void* dst, int value, std::size_t bytes) override {
    const device_scope scope(owner_->device);
    TANDEM_CUDA(cudaMemsetAsync(dst, value, bytes, handle_), k_check_pointers);
  }

  /// Pageable (not pinned) host memory makes the copy staged and partly synchronous; use
  /// backend::allocate_host for host buffers that take part in swapping.
  void copy_async(void* dst, const void* src, std::size_t bytes) override {
    const device_scope scope(owner_->device);
    TANDEM_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, handle_), k_check_pointers);
  }

  void launch_host(std::function<void()> fn) override {
    TANDEM_EXPECTS(fn != nullptr, usage_error, "launch_host needs a function, got an empty one");
    auto call = std::make_unique<host_call>(host_call{std::move(fn), errors_});
    TANDEM_CUDA(cudaLaunchHostFunc(handle_, &host_call::run, call.get()), k_check_device);
    static_cast<void>(call.release());  // host_call::run deletes it
  }

  [[nodiscard]] cudaStream_t handle() const { return handle_; }

 private:
  std::shared_ptr<detail::cuda_backend_state> owner_;
  std::shared_ptr<host_errors> errors_ = std::make_shared<host_errors>();
  cudaStream_t handle_ = nullptr;
};

}  // namespace

bool cuda_backend::available(std::string* why) noexcept {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return true;
  static_cast<void>(cudaGetLastError());
  if (why != nullptr) {
    try {
      *why =
          status != cudaSuccess
              ? std::string("no CUDA device: ") + cudaGetErrorString(status)
              : std::string("no CUDA device: the driver reports none (check CUDA_VISIBLE_DEVICES)");
    } catch (...) {
      // No memory for the reason; the answer itself still holds.
    }
  }
  return false;
}

cuda_backend::cuda_backend(cuda_backend_options options)
    : state_(std::make_shared<detail::cuda_backend_state>()) {
  std::string why;
  TANDEM_EXPECTS(available(&why), device_error,
                 "cannot use the CUDA backend: " + why +
                     "; run on a machine with an NVIDIA GPU and driver, or use the cpu backend");
  int count = 0;
  TANDEM_CUDA(cudaGetDeviceCount(&count), k_check_device);
  TANDEM_EXPECTS(options.device >= 0 && options.device < count, device_error,
                 "CUDA device " + std::to_string(options.device) +
                     " does not exist: this process sees " + std::to_string(count) +
                     " CUDA device(s), numbered from 0 (after CUDA_VISIBLE_DEVICES); pick one "
                     "of those");
  state_->device = options.device;
  const device_scope scope(state_->device);
  cudaDeviceProp properties{};
  TANDEM_CUDA(cudaGetDeviceProperties(&properties, state_->device), k_check_device);
  state_->name = properties.name;
  std::size_t free_bytes = 0;
  TANDEM_CUDA(cudaMemGetInfo(&free_bytes, &state_->total), k_check_device);
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
  const device_scope scope(state_->device);
  void* base = nullptr;
  if (const cudaError_t status = cudaMalloc(&base, bytes); status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    std::size_t free_bytes = 0;
    std::size_t total = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total) == cudaSuccess;
    static_cast<void>(cudaGetLastError());
    TANDEM_FAIL(device_error,
                "cudaMalloc of " + format_bytes(bytes) + " (" + std::to_string(bytes) +
                    " bytes) on cuda:" + std::to_string(state_->device) + " failed (" +
                    cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + "); " +
                    (known ? format_bytes(free_bytes) + " of " + format_bytes(total) + " is free"
                           : std::string("the free memory is unknown")) +
                    "; lower the pool capacity, or stop other processes using the device "
                    "(nvidia-smi lists them)");
  }
  try {
    return std::make_unique<cuda_reservation>(static_cast<std::byte*>(base), bytes, state_->device);
  } catch (...) {
    log_failure(cudaFree(base), "cudaFree");
    throw;
  }
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
  const device_scope scope(state_->device);  // the context the pinned memory is registered with
  void* data = nullptr;
  TANDEM_CUDA(cudaMallocHost(&data, bytes),
              "could not pin " + format_bytes(bytes) +
                  " of host memory; pinned memory is locked RAM: free some or ask for less");
  try {
    return std::make_unique<cuda_host_buffer>(static_cast<std::byte*>(data), bytes);
  } catch (...) {
    log_failure(cudaFreeHost(data), "cudaFreeHost");
    throw;
  }
}

void* native_handle(const stream& s) {
  const auto* cuda = dynamic_cast<const cuda_stream*>(&s);
  TANDEM_EXPECTS(cuda != nullptr, usage_error,
                 "native_handle: stream '" + s.name() +
                     "' was not made by a cuda_backend, so it has no cudaStream_t; make the "
                     "job's streams with the cuda_backend its pool lives on");
  return cuda->handle();
}

}  // namespace tandem::device
