#pragma once
// The CUDA backend: the device interface over the CUDA runtime API. Built when the CUDA toolkit
// is found; CUDA types stay out of this header so that users need no CUDA include path.

#include <memory>
#include <string>

#include "tandem/device/backend.hpp"

namespace tandem::device {

namespace detail {
struct cuda_backend_state;
}

struct cuda_backend_options {
  int device = 0;  ///< CUDA device ordinal
};

class cuda_backend final : public backend {
 public:
  /// Throws device_error naming the cause when the device cannot be used.
  explicit cuda_backend(cuda_backend_options options = {});
  ~cuda_backend() override;

  /// Whether a CUDA device can be used; never throws. `why` receives the reason when not.
  static bool available(std::string* why = nullptr);

  [[nodiscard]] backend_kind kind() const override { return backend_kind::cuda; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::size_t total_memory() const override;
  [[nodiscard]] std::unique_ptr<reservation> reserve(std::size_t bytes) override;
  [[nodiscard]] std::unique_ptr<stream> create_stream(std::string name, stream_kind kind) override;
  [[nodiscard]] std::unique_ptr<host_buffer> allocate_host(std::size_t bytes) override;

 private:
  std::shared_ptr<detail::cuda_backend_state> state_;
};

}  // namespace tandem::device
