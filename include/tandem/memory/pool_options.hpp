#pragma once
// The single source of a pool's configuration. CLI flags and workload files fill this struct;
// validate() says what is wrong with it in words a user can act on.

#include <cstddef>

#include "tandem/common/units.hpp"

namespace tandem::memory {

struct pool_options {
  /// Device memory the pool reserves. Rounded down to a whole number of regions.
  std::size_t capacity = 1 * GiB;
  /// Most bytes of regions the jobs may hold together; 0 means the capacity. Changeable later.
  std::size_t budget = 0;
  /// Unit of memory that moves between jobs (Zico §6.3 uses 64 MiB). At least 2 MiB, a power
  /// of two; allocations larger than a region take a contiguous run of regions.
  std::size_t region_size = 64 * MiB;
  /// Non-persistent requests below this go to small-block regions, away from feature maps;
  /// capped at an eighth of a region (small_block_limit).
  std::size_t small_threshold = 1 * MiB;
  /// Every request is rounded up to a multiple of this (a power of two, at least 256 for CUDA).
  std::size_t granularity = 512;
  /// Record one completion event per this many bytes freed on a stream, not one per free
  /// (Zico Table 1: 8 MiB for CNNs, 256 MiB for RNNs). See Note [Completion batches].
  std::size_t event_granularity = 8 * MiB;
  /// Most jobs registered at once.
  std::size_t max_jobs = 1024;

  /// Throws config_error naming the first invalid field and the accepted range.
  void validate() const;
  /// Requests below this are small blocks: `small_threshold`, but at most an eighth of a region.
  /// A small block must be small against the region too: with 2 MiB regions, 512 KiB tensors
  /// sharing regions with long-lived gradients of a few KiB left holes just short of 512 KiB
  /// (docs/ARCHITECTURE.md, job_arena).
  [[nodiscard]] std::size_t small_block_limit() const {
    return small_threshold < region_size / 8 ? small_threshold : region_size / 8;
  }
  /// The budget in force: `budget`, or the capacity when it is 0.
  [[nodiscard]] std::size_t effective_budget() const { return budget == 0 ? capacity : budget; }
};

}  // namespace tandem::memory
