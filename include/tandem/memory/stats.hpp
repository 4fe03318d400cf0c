#pragma once
// Statistics of a job's memory and of the whole pool. Every field says whether it is a current
// value ("now"), a high-water mark ("peak") or a running count since the start ("count").

#include <array>
#include <cstddef>
#include <cstdint>

#include "tandem/memory/alloc_kind.hpp"

namespace tandem::memory {

struct kind_stats {
  std::size_t live_bytes = 0;       ///< now: bytes of live allocations of this kind
  std::size_t peak_live_bytes = 0;  ///< peak of live_bytes
  std::uint64_t allocations = 0;    ///< count
  std::uint64_t frees = 0;          ///< count
};

struct job_stats {
  std::array<kind_stats, alloc_kind_count> by_kind{};
  std::size_t live_bytes = 0;            ///< now: all kinds
  std::size_t peak_live_bytes = 0;       ///< peak of live_bytes
  std::size_t reserved_bytes = 0;        ///< now: bytes of the regions the job holds
  std::size_t peak_reserved_bytes = 0;   ///< peak of reserved_bytes
  std::uint64_t allocations = 0;         ///< count
  std::uint64_t frees = 0;               ///< count
  std::uint64_t regions_borrowed = 0;    ///< count: regions taken from the sharable area
  std::uint64_t regions_returned = 0;    ///< count: regions given back
  std::uint64_t same_stream_reuses = 0;  ///< count: served from an unsynced block of its stream
  std::uint64_t synced_reuses = 0;       ///< count: served from a block known complete
  std::uint64_t other_class_reuses = 0;  ///< count: served, short of regions, from another class
  std::uint64_t cross_stream_waits = 0;  ///< count: took another stream's block, ordered by a wait
  std::uint64_t host_syncs = 0;          ///< count: blocked the host to make freed memory usable
  std::uint64_t events_recorded = 0;     ///< count: completion events recorded on free
  std::uint64_t out_of_memory = 0;       ///< count: requests refused
  std::uint64_t invalid_frees = 0;       ///< count: double frees, foreign or wrong-job pointers
  std::size_t unsynced_bytes = 0;        ///< now: freed bytes the device may still be using
};

struct pool_stats {
  std::size_t capacity = 0;  ///< bytes the pool reserved from the device
  std::size_t budget = 0;    ///< now: the budget in force
  std::size_t region_size = 0;
  std::size_t live_bytes = 0;           ///< now: live allocations of every job
  std::size_t peak_live_bytes = 0;      ///< peak of live_bytes
  std::size_t reserved_bytes = 0;       ///< now: regions held by jobs
  std::size_t peak_reserved_bytes = 0;  ///< peak of reserved_bytes
  std::size_t free_regions = 0;         ///< now: regions in the sharable area
  std::size_t largest_free_run = 0;     ///< now: regions in the longest contiguous free run
  std::size_t jobs = 0;                 ///< now: registered jobs
  std::uint64_t invalid_frees = 0;      ///< count: frees the pool refused (any job)
};

}  // namespace tandem::memory
