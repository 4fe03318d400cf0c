#pragma once
// A DNN-like iteration as an allocation trace: the forward pass allocates an activation per
// layer (large first, shrinking as the network narrows) with small temporaries interleaved, the
// backward pass allocates gradients and frees activations in reverse. Deterministic for a seed.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"

namespace tandem::bench {

struct trace_op {
  bool allocate;
  std::uint32_t slot;  ///< which live block: the allocation stores into it, the free reads it
  std::size_t bytes;
  memory::alloc_kind kind;
};

struct dnn_trace {
  std::vector<trace_op> ops;
  std::size_t slots = 0;
};

/// ResNet-50-like at batch 64: 50 layers, activations from 100 MiB down to ~3 MiB (peak about
/// 1.4 GiB live), two temporaries of 4-512 KiB per layer and pass.
dnn_trace make_dnn_trace(std::uint64_t seed, std::size_t layers = 50,
                         std::size_t first_activation = 100u << 20);

/// The parameters and optimizer state (persistent): kept alive across iterations.
std::vector<std::size_t> make_parameter_sizes(std::uint64_t seed);

}  // namespace tandem::bench
