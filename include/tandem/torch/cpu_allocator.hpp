#pragma once
// libtorch's CPU allocator replaced by the pool (CPU builds). Allocations made on a thread with a
// job_binding go to the pool under that job; others (threads outside every job) go to the
// allocator libtorch had before, so that libtorch's own start-up work is unaffected.
//
// Contract: install once, before the jobs start; uninstall only after every tensor allocated from
// the pool is gone and before the pool is destroyed. A pooled tensor is freed into the pool by
// its owner job (found from the pointer's region), whichever thread drops it.

#include "tandem/memory/device_pool.hpp"

namespace tandem::torch_support {

/// Makes `pool` libtorch's CPU allocator. Throws usage_error if a pool is already installed.
void install_cpu_allocator(memory::device_pool& pool);

/// Gives libtorch its previous CPU allocator back. Does nothing when none is installed.
void uninstall_cpu_allocator() noexcept;

/// RAII form of install/uninstall.
class cpu_allocator_scope {
 public:
  explicit cpu_allocator_scope(memory::device_pool& pool) { install_cpu_allocator(pool); }
  ~cpu_allocator_scope() { uninstall_cpu_allocator(); }
  cpu_allocator_scope(const cpu_allocator_scope&) = delete;
  cpu_allocator_scope& operator=(const cpu_allocator_scope&) = delete;
};

}  // namespace tandem::torch_support
