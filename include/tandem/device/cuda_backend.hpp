#pragma once
// The CUDA backend: the device interface over the CUDA runtime API. Built when the CUDA toolkit
// is found (TANDEM_HAVE_CUDA); CUDA types stay out of this header so that users need no CUDA
// include path.
//
// Device memory comes from cudaMalloc, streams are non-blocking CUDA streams (copy streams too:
// cudaMemcpyAsync uses the copy engine whatever the stream), events are timing-free CUDA events
// and host buffers are pinned. Every call switches to the backend's device for its duration and
// restores the caller's current device, so one process may hold backends for several devices.

#include <cstddef>
#include <memory>
#include <string>

#include "tandem/device/backend.hpp"

namespace tandem::device {

namespace detail {
struct cuda_backend_state;
}

struct cuda_backend_options {
  int device = 0;  ///< CUDA device ordinal, as numbered after CUDA_VISIBLE_DEVICES
};

class cuda_backend final : public backend {
 public:
  /// Throws device_error naming the cause when there is no CUDA device, `options.device` does not
  /// exist or the device cannot be initialised.
  explicit cuda_backend(cuda_backend_options options = {});
  ~cuda_backend() override;

  /// Whether a CUDA device can be used; never throws. `why` receives the reason when not, e.g.
  /// "no CUDA device: CUDA driver version is insufficient for CUDA runtime version".
  [[nodiscard]] static bool available(std::string* why = nullptr) noexcept;

  [[nodiscard]] backend_kind kind() const override { return backend_kind::cuda; }
  /// "cuda:0 NVIDIA H100 80GB HBM3 (79.19 GiB)".
  [[nodiscard]] std::string describe() const override;
  /// The device's total memory as cudaMemGetInfo reports it; other processes may hold part of it.
  [[nodiscard]] std::size_t total_memory() const override;
  [[nodiscard]] std::unique_ptr<reservation> reserve(std::size_t bytes) override;
  [[nodiscard]] std::unique_ptr<stream> create_stream(std::string name, stream_kind kind) override;
  [[nodiscard]] std::unique_ptr<host_buffer> allocate_host(std::size_t bytes) override;

 private:
  std::shared_ptr<detail::cuda_backend_state> state_;  // shared with streams, which may outlive us
};

/// The cudaStream_t of a stream made by a cuda_backend, as void* so that this header needs no
/// CUDA include; libtorch integration wraps it (c10::cuda::getStreamFromExternal) to run a job's
/// kernels on the job's stream. The stream keeps ownership: the handle dies with it. Throws
/// usage_error for a stream of another backend.
[[nodiscard]] void* native_handle(const stream& s);

}  // namespace tandem::device
