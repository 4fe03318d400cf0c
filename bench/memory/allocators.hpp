#pragma once
// The allocators the memory benchmarks compare, behind one small interface, so that every
// benchmark runs every allocator (a factory list, as in RMM's benchmarks).
//
// Fairness rules every adapter follows: nobody touches the memory it gets (the benchmarks time
// the allocator, not page faults), and each baseline is called through its own explicit API.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"

namespace tandem::bench {

/// One thread's handle on an allocator. Handles of the same allocator share its memory; for
/// tandem a handle is a job with its own stream, so two threads are two jobs on one pool.
class allocator {
 public:
  virtual ~allocator() = default;
  /// Never returns nullptr for bytes > 0; throws when out of memory.
  [[nodiscard]] virtual void* allocate(std::size_t bytes, memory::alloc_kind kind) = 0;
  virtual void deallocate(void* ptr) = 0;
  /// Bytes taken from the underlying memory, for fragmentation; empty when the allocator has no
  /// comparable number (the mallocs).
  [[nodiscard]] virtual std::optional<std::size_t> reserved_bytes() const { return std::nullopt; }
};

struct allocator_factory {
  std::string name;
  /// Opens a handle for the calling thread. The memory behind it is created on first use and
  /// lives until the process exits.
  std::function<std::unique_ptr<allocator>()> open;
};

/// tandem (64 MiB regions), tandem_2MiB, glibc, jemalloc, mimalloc, first_fit.
const std::vector<allocator_factory>& allocator_factories();

/// Virtual size of the pools (tandem, first_fit): far more than any workload needs. Nothing is
/// touched, so it costs address space only.
inline constexpr std::size_t pool_bytes = std::size_t{16} << 30;

}  // namespace tandem::bench
