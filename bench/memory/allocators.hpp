#pragma once
// Every allocator the memory benchmarks compare, behind one small interface, so that every
// benchmark runs every allocator. None of them touches the memory it hands out: the benchmarks
// time the allocator, not page faults.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"

namespace tandem::bench {

/// One thread's handle on an allocator (for tandem: its own job and stream).
class session {
 public:
  virtual ~session() = default;
  virtual void* allocate(std::size_t bytes, memory::alloc_kind kind) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  /// Bytes the allocator holds from its memory source (0 when it cannot tell).
  [[nodiscard]] virtual std::size_t reserved_bytes() const { return 0; }
};

class allocator {
 public:
  virtual ~allocator() = default;
  [[nodiscard]] virtual std::unique_ptr<session> open_session() = 0;
};

/// "tandem" (64 MiB regions), "tandem_2MiB", "glibc", "jemalloc", "mimalloc", "first_fit".
/// Each is created once per process and shared by the benchmarks' threads.
allocator& allocator_named(const std::string& name);
const std::vector<std::string>& allocator_names();

}  // namespace tandem::bench
