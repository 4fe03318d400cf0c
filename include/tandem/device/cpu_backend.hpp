#pragma once
// The CPU backend: a faithful stand-in for a GPU on machines without one.
//
// Device memory is one anonymous mapping of the reserved size (pages are touched lazily, so a
// large reservation costs address space, not RAM). A stream is an in-order work queue executed by
// its own worker thread, so work really runs after the call that enqueued it and the hazards of a
// GPU (reusing memory that pending work still touches) really happen here. Copy streams stand for
// the copy engine and can be slowed to a set bandwidth so that swapping costs what PCIe would.

#include <cstddef>
#include <functional>
#include <memory>

#include "tandem/device/backend.hpp"

namespace tandem::device {

namespace detail {
struct cpu_backend_state;
}

struct cpu_backend_options {
  /// Bytes the backend lets pools reserve in total; 0 means the machine's physical memory.
  std::size_t memory_limit = 0;
  /// Bandwidth of copy streams in bytes per second; 0 copies at memcpy speed.
  double copy_bandwidth = 0;
};

class cpu_backend final : public backend {
 public:
  explicit cpu_backend(cpu_backend_options options = {});
  ~cpu_backend() override;

  [[nodiscard]] backend_kind kind() const override { return backend_kind::cpu; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::size_t total_memory() const override;
  [[nodiscard]] std::unique_ptr<reservation> reserve(std::size_t bytes) override;
  [[nodiscard]] std::unique_ptr<stream> create_stream(std::string name, stream_kind kind) override;
  [[nodiscard]] std::unique_ptr<host_buffer> allocate_host(std::size_t bytes) override;

  /// Enqueues `kernel` on `target` (a stream of this backend): the CPU analogue of a kernel
  /// launch. Equivalent to target.launch_host(kernel).
  static void launch(stream& target, std::function<void()> kernel);

 private:
  std::shared_ptr<detail::cpu_backend_state> state_;
};

}  // namespace tandem::device
