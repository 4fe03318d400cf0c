#pragma once
// The operations of one training iteration that are not a layer's own, and the names of every
// operation: what the lowering (a job_profile) and the access sequence (footprint's tensor
// access sequence) both build from, so that the two time and name the same iteration.

#include <cstdint>
#include <string>

#include "catalog_graph.hpp"

namespace tandem::sim::catalog {

enum class optimizer_kind : std::uint8_t {
  sgd,   ///< with momentum: one state tensor per parameter
  adam,  ///< two state tensors per parameter
};

/// State tensors the optimizer keeps per parameter tensor.
[[nodiscard]] int optimizer_states(optimizer_kind optimizer);

/// An operation of the iteration besides the layers': its work and the scratch it allocates for
/// its duration alone.
struct iteration_op {
  std::string name;
  work cost;
  std::int64_t scratch_bytes = 0;
};

/// Zeroing every gradient in place, first in the iteration (gradients are kept between
/// iterations, docs/sim-models.md, "Memory").
[[nodiscard]] iteration_op zero_grad(const network& net);

/// The optimizer's step over every parameter, last in the iteration.
[[nodiscard]] iteration_op optimizer_step(const network& net, optimizer_kind optimizer);

[[nodiscard]] std::string forward_name(const layer& l);
[[nodiscard]] std::string backward_name(const layer& l);

}  // namespace tandem::sim::catalog
