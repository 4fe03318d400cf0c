#pragma once
// Where an iteration's optimizer step runs, as a rewrite of its access sequence. The catalogue
// and PyTorch's fused optimizers (foreach) step every parameter in one operation after the whole
// backward pass, so every gradient lives until then; libtorch's C++ optimizers step parameter
// by parameter, and a dataflow framework (TensorFlow 1.x, TENSILE's, §3.1: the optimizer's
// operators are nodes of the graph, run in a topological order) may update a parameter as soon
// as its gradient is complete.

#include "tandem/footprint/access_sequence.hpp"

namespace tandem::footprint {

/// `s` with every optimizer-phase operation that reads several parameters split into one
/// operation per parameter, in the order of the parameters' tensors, each reading the
/// parameter, its gradient (named "<parameter>.grad") and its optimizer state (named
/// "<parameter>.<state>"), taking a share of the operation's time proportional to its bytes; a
/// gradient the step freed is freed after its own update, and a tensor of the step that belongs
/// to no parameter goes with the last update. The optimizer as TENSILE's framework (§4.1) and
/// libtorch's C++ optimizers run it, parameter by parameter, where a fused step (PyTorch's
/// foreach, the catalogue's one `sgd_step`) needs every parameter, gradient and state at once.
/// Sequences without such an operation come back unchanged.
[[nodiscard]] access_sequence per_parameter_step(const access_sequence& s);

/// `s` (stepped per parameter, as per_parameter_step leaves it) in a dataflow order: each
/// parameter's update runs right after the last backward operation that reads its gradient, and
/// a gradient made before the forward pass (zeroed in place, as the catalogue keeps it) is made
/// by the first backward operation that reads it instead (set to none, as PyTorch's
/// `zero_grad(set_to_none=True)` leaves it). Each gradient then lives from its layer's backward
/// to its update, not through the whole backward pass. Operations keep their durations and the
/// gaps before them; the iteration's length is unchanged. Needs operations that do not overlap
/// (a generated sequence; usage_error otherwise). A parameter whose gradient no backward
/// operation reads keeps its update where it was.
[[nodiscard]] access_sequence step_in_backward(const access_sequence& s);

}  // namespace tandem::footprint
