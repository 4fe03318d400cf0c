#pragma once
// An in-order queue of device work (CUDA stream, or a worker thread on the CPU backend).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "tandem/device/event.hpp"

namespace tandem::device {

/// Compute streams run kernels; copy streams stand for the copy engine (on the CPU backend they
/// honour the configured copy bandwidth, so that swapping costs what PCIe would).
enum class stream_kind { compute, copy };

/// Contract:
/// - Work enqueued on one stream executes in order, later than the call that enqueued it.
/// - Work on different streams is unordered unless ordered with record()/wait().
/// - Enqueuing calls are made by one host thread at a time per stream (as with a CUDA stream used
///   by one job); query, record and synchronize may come from any thread.
class stream {
 public:
  virtual ~stream() = default;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  /// Dense id, unique among the live streams of one backend; allocators index by it.
  [[nodiscard]] std::uint32_t id() const { return id_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] stream_kind kind() const { return kind_; }

  /// An event that completes once everything enqueued so far has executed.
  [[nodiscard]] virtual event_ptr record() = 0;

  /// Work enqueued after this call starts only after `done` has completed. Does not block.
  virtual void wait(event_ptr done) = 0;

  /// Blocks the host until everything enqueued so far has executed. Rethrows the first error a
  /// host function of this stream raised since the last synchronize; device faults surface as
  /// device_error (on CUDA they break the whole context). Events never report such errors.
  virtual void synchronize() = 0;

  /// Asynchronously sets `bytes` bytes at `dst` to `value`.
  virtual void memset_async(void* dst, int value, std::size_t bytes) = 0;

  /// Asynchronously copies `bytes` bytes; either side may be device memory or a host_buffer
  /// (pageable host memory works but makes the copy partly synchronous on CUDA).
  virtual void copy_async(void* dst, const void* src, std::size_t bytes) = 0;

  /// Runs `fn` on the host once the work enqueued before it has executed; later work waits for
  /// it. `fn` must not call the CUDA API nor wait on events or other streams: on CUDA host
  /// functions may share one runtime thread (cudaLaunchHostFunc's rule), so waiting can deadlock.
  virtual void launch_host(std::function<void()> fn) = 0;

 protected:
  stream(std::uint32_t id, std::string name, stream_kind kind)
      : id_(id), name_(std::move(name)), kind_(kind) {}

 private:
  std::uint32_t id_;
  std::string name_;
  stream_kind kind_;
};

}  // namespace tandem::device
