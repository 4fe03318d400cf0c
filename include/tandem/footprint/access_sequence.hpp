#pragma once
// One training iteration of a job as TENSILE's tensor access sequence (§4.1): every operation in
// the order it ran, with its measured start and duration, and every tensor with its size, the
// access that creates it (TENSILE's output tensor access, OTA) and every access that reads it
// (input tensor accesses, ITA). What planners plan from, what the cost model replays, what the
// executor ties a plan's triggers to. Recorded on real libtorch jobs (`tandem profile`) and
// generated for the simulator's paper-scale models by its catalogue.

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::footprint {

/// Where in the iteration an operation runs. The optimizer step is part of the sequence so that
/// a plan can schedule across iterations through it (TENSILE §4.1).
enum class phase : std::uint8_t { forward, backward, optimizer };

/// What a tensor is to the iteration.
enum class tensor_role : std::uint8_t {
  activation,       ///< made in the forward pass and kept for the backward (a feature map, a mask)
  gradient,         ///< made in the backward pass: of an activation (transient) or a parameter
  parameter,        ///< persistent: lives across iterations
  optimizer_state,  ///< persistent: momentum, Adam's moments
  temporary,        ///< made and freed within the pass that made it (workspace, not kept)
};

/// What an operation computes, where planners care: vDNN offloads the inputs of convolutions,
/// SuperNeurons recomputes only cheap layers.
enum class op_kind : std::uint8_t {
  convolution,
  matmul,  ///< linear layers, attention's GEMMs, recurrent cells
  normalization,
  pooling,
  elementwise,  ///< activations, additions, dropout, concatenation: cheap to recompute
  other,        ///< embedding, loss, copies, anything else
  optimizer,
};

[[nodiscard]] std::string_view to_string(phase p);
[[nodiscard]] std::string_view to_string(tensor_role r);
[[nodiscard]] std::string_view to_string(op_kind k);

struct operation {
  std::string name;  ///< "conv1", "aten::convolution", "ConvolutionBackward0", "sgd_step"
  phase where = phase::forward;
  op_kind kind = op_kind::other;
  double start_s = 0;     ///< from the iteration's start, as measured (or predicted) alone
  double duration_s = 0;  ///< how long it computes; recomputing it costs as much again
  /// Draws random numbers (dropout): recomputing it must replay the generator's state.
  bool random = false;
  /// Running it again rebuilds every tensor it makes that outlives it, and changes nothing else
  /// (it writes no memory made before it started). Recorded sequences tell per operation (a
  /// batch norm updates its running statistics, an autograd node is not an operator that can be
  /// called again); the catalogue assumes every operation is. Plans recompute only tensors of
  /// recomputable operations.
  bool recomputable = true;
  /// The bytes of its scratch tensors (access_sequence::is_scratch) to count beside its
  /// outputs, as recorded: the most its scratch held at once, and no more than what everything
  /// it made rose to above its outputs (the cost model holds the outputs from its start). An
  /// operator's scratch (an im2col buffer, a backward node's partial gradients) mostly comes
  /// and goes one piece after another, so their sum overstates what the operation holds
  /// (ResNet-20's convolution backward at batch 300 makes five 4.7 MiB pieces and holds one or
  /// two), and it is freed before the outputs are made. Empty: all of them at once (generated
  /// sequences, recordings of schema 2).
  std::optional<std::size_t> scratch_peak_bytes = std::nullopt;
  friend bool operator==(const operation&, const operation&) = default;
};

struct tensor {
  std::string name;  ///< for reports: "conv1.out", "fc.weight"
  std::size_t bytes = 0;
  tensor_role role = tensor_role::activation;
  /// The operation whose output it is (its OTA). Persistent tensors (parameters, optimizer
  /// state) exist before the iteration: no creating operation.
  std::optional<std::size_t> created_by;
  /// The operations that read it (its ITAs), in execution order; an operation appears once.
  std::vector<std::size_t> read_by;
  /// The operation after which the iteration lets it go, when that is not its last reader (a
  /// gradient accumulated into, an output freed by the framework later); empty: after its last
  /// reader, or never for persistent tensors.
  std::optional<std::size_t> freed_after;
  /// Its place among the allocations the iteration made (0: the first), in recorded sequences:
  /// how the executor finds the tensor again in a later iteration of the same job. Empty for
  /// persistent tensors and in generated sequences.
  std::optional<std::size_t> allocation;
  friend bool operator==(const tensor&, const tensor&) = default;
};

struct access_sequence {
  std::string model;
  std::int64_t batch_size = 0;
  std::vector<operation> operations;  ///< in execution order; starts never decrease
  std::vector<tensor> tensors;
  /// Bytes the sequence does not itemize but that the job holds all through the iteration (the
  /// framework's own buffers, the batch before the first operation): the cost model's floor.
  std::size_t other_bytes = 0;
  friend bool operator==(const access_sequence&, const access_sequence&) = default;

  /// When the last operation ends (the iteration's length alone).
  [[nodiscard]] double iteration_s() const;
  /// The same iteration with operation `op` taking `durations[op]` (one per operation): the
  /// idle time recorded before each operation is kept (never negative), so an operation that
  /// takes longer pushes the later ones back. Throws usage_error on a count that does not
  /// match or a duration that is negative or not finite.
  [[nodiscard]] access_sequence with_durations(std::span<const double> durations) const;
  /// The tensors operation `op` reads (its inputs), in tensor order.
  [[nodiscard]] std::vector<std::size_t> inputs_of(std::size_t op) const;
  /// The tensors operation `op` creates (its outputs), in tensor order.
  [[nodiscard]] std::vector<std::size_t> outputs_of(std::size_t op) const;
  /// The operation at whose end tensor `t` is released: its freed_after, else its last reader,
  /// else (never read) its creating operation; none for a persistent tensor (held throughout).
  [[nodiscard]] std::optional<std::size_t> release_op(std::size_t t) const;
  /// The operation of tensor `t`'s access `access`, numbered as plan.hpp's decisions number
  /// them: 0 its creation (none for a persistent tensor: the iteration's start), i >= 1 its
  /// i-th read.
  [[nodiscard]] std::optional<std::size_t> access_op(std::size_t t, std::size_t access) const;
  /// Whether tensor `t` is scratch: made by an operation, released when it ends and read by no
  /// other. No plan can move it; it counts only while its operation runs.
  [[nodiscard]] bool is_scratch(std::size_t t) const;
  /// Per operation, what its scratch tensors hold while it runs: its scratch_peak_bytes where
  /// recorded (at most their sum), else their sum. The cost model and the planners' memory
  /// curves count scratch tensors through this, never one by one.
  [[nodiscard]] std::vector<std::size_t> scratch_bytes_by_op() const;
};

/// Throws config_error naming the tensor or operation for a sequence that contradicts itself:
/// an access to an operation that does not exist, a read before the tensor's creation, reads
/// out of order, starts that decrease, a transient tensor without a creating operation.
void validate(const access_sequence& sequence);

/// Schema 3 added operations' scratch_peak_bytes; schema 2 files are read as without it.
inline constexpr int access_sequence_schema_version = 3;

void write_access_sequence_json(const access_sequence& sequence, std::ostream& out);
/// Reads what write_access_sequence_json writes, validated. `source` names the input in
/// messages; config_error names the field for malformed input or another schema version.
[[nodiscard]] access_sequence read_access_sequence_json(std::istream& in,
                                                        const std::string& source);

}  // namespace tandem::footprint
