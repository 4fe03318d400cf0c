#pragma once
// The device a pool lives on: reserves its memory, makes streams and pinned host buffers.
// Two implementations: cpu (always built) and cuda (built when the CUDA toolkit is found).

#include <cstddef>
#include <memory>
#include <string>

#include "tandem/device/stream.hpp"

namespace tandem::device {

enum class backend_kind { cpu, cuda };

[[nodiscard]] const char* to_string(backend_kind kind);

/// One contiguous range of device memory, released when destroyed.
class reservation {
 public:
  virtual ~reservation() = default;
  reservation(const reservation&) = delete;
  reservation& operator=(const reservation&) = delete;
  [[nodiscard]] std::byte* base() const { return base_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool contains(const void* ptr) const {
    auto* p = static_cast<const std::byte*>(ptr);
    return p >= base_ && p < base_ + size_;
  }

 protected:
  reservation(std::byte* base, std::size_t size) : base_(base), size_(size) {}

 private:
  std::byte* base_;
  std::size_t size_;
};

/// Host memory that the copy engine can reach (pinned on CUDA), outside every budget.
class host_buffer {
 public:
  virtual ~host_buffer() = default;
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;
  [[nodiscard]] std::byte* data() const { return data_; }
  /// At least the bytes asked for (a backend may round up).
  [[nodiscard]] std::size_t size() const { return size_; }

 protected:
  host_buffer(std::byte* data, std::size_t size) : data_(data), size_(size) {}

 private:
  std::byte* data_;
  std::size_t size_;
};

/// Thread safety: every member may be called from any thread.
class backend {
 public:
  virtual ~backend() = default;

  [[nodiscard]] virtual backend_kind kind() const = 0;
  /// A line for reports: "cpu (16.00 GiB reservable, copy 12.0 GB/s)", "cuda:0 NVIDIA H100 ...".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Bytes of device memory the backend offers in total (on CUDA the device's total, of which
  /// the context and other processes take a share, so not all of it can be reserved).
  [[nodiscard]] virtual std::size_t total_memory() const = 0;

  /// Reserves `bytes` of device memory. Throws device_error when the device cannot provide it,
  /// usage_error for 0 bytes.
  [[nodiscard]] virtual std::unique_ptr<reservation> reserve(std::size_t bytes) = 0;

  [[nodiscard]] virtual std::unique_ptr<stream> create_stream(std::string name,
                                                              stream_kind kind) = 0;

  [[nodiscard]] virtual std::unique_ptr<host_buffer> allocate_host(std::size_t bytes) = 0;
};

}  // namespace tandem::device
