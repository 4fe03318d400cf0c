#pragma once
// Workloads as allocation traces: lists of events generated once, outside the timed loops, so
// that every allocator replays exactly the same requests and no random number is drawn while
// the clock runs. Every generator is deterministic for its seed.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"

namespace tandem::bench {

struct trace_event {
  bool allocate = true;
  std::uint32_t slot = 0;  ///< the block's name: an allocation fills the slot, a free empties it
  std::size_t bytes = 0;   ///< allocations only
  memory::alloc_kind kind = memory::alloc_kind::unknown;
};

struct trace {
  /// Allocated once before the replays and kept (kind persistent).
  std::vector<std::size_t> persistent;
  /// One replay. Frees everything it allocates, so it can be replayed back to back.
  std::vector<trace_event> events;
  std::size_t slots = 0;
  /// Live bytes (requested sizes, persistent ones included) at their highest, and the index of
  /// the allocation event that reaches it.
  std::size_t peak_live_bytes = 0;
  std::size_t peak_event = 0;
};

/// One training iteration of a ResNet-50-like CNN at `batch` (fp16 activations, fp32 weights):
/// the forward pass saves one activation per conv (about 100 MiB at the stem, a few MiB in the
/// last stage, at batch 64) plus small batch-norm buffers, with cuDNN-style workspaces of
/// 4-512 KiB allocated and freed around each layer; the backward pass allocates input gradients
/// and frees activations in reverse. Weights, their gradients and momentum are persistent.
/// `seed` draws the workspaces.
trace make_resnet50_trace(std::uint64_t seed, std::size_t batch = 64);

/// RMM-style random allocations: sizes uniform in [min_bytes, max_bytes]; each step allocates
/// with probability `allocate_probability`, or frees a uniformly chosen live block; an
/// allocation that would take live bytes above `cap` frees instead. Ends by freeing what is left.
trace make_random_trace(std::uint64_t seed, std::size_t steps, std::size_t min_bytes,
                        std::size_t max_bytes, std::size_t cap, double allocate_probability);

}  // namespace tandem::bench
