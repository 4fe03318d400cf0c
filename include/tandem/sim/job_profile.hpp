#pragma once
// What the simulator knows of a job: one training iteration as it runs alone, as a sequence of
// operations (how long each takes alone, how much of the device it can fill) and the memory it
// allocates and frees along the way. It comes from a recorded profile (`tandem profile`, this
// machine) or from the generator (paper-scale models on a GPU spec). Times are "solo seconds":
// positions in the iteration when the job has the device to itself; the simulator stretches
// them when jobs share compute.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"
#include "tandem/runtime/plan_traffic.hpp"
#include "tandem/schedule/usage_curve.hpp"

namespace tandem::sim {

/// One operation of an iteration (a kernel, a layer's forward or backward, or a coarser phase).
/// Its `solo_s` is what it adds to a solo iteration; of that, `device_s` keeps the device busy
/// at its fill and `host_s` is spent on the host issuing it, overlapped with the device as a
/// stream overlaps them (src/sim/host_stream.hpp, Note [Host runs ahead]). Profiles without a
/// host model (recorded ones, hand-made ones) leave both unset: the whole operation is device
/// time, issued at once.
struct operation {
  std::string name;
  double solo_s = 0;  ///< duration when the job runs alone: device completion minus the previous
  /// Share of the device the operation can keep busy, in (0, 1]: a large convolution fills the
  /// GPU (1.0), a small recurrent step a fraction. Operations running at once share compute by
  /// processor sharing weighted by fill.
  double fill = 1.0;
  /// Bytes the operation reads and writes in device memory (inputs, outputs, weights); what
  /// unified-memory paging costs are charged on. 0 when unknown.
  std::size_t bytes_touched = 0;
  /// Host seconds to issue it (framework dispatch, kernel launches; for the first operation also
  /// the iteration's own host work), on one host core, filling nothing on the device.
  double host_s = 0;
  /// Device seconds its kernels run alone, at `fill`; negative: all of `solo_s`.
  double device_s = -1;

  [[nodiscard]] double device_time() const { return device_s < 0 ? solo_s : device_s; }
};

/// One allocation (bytes > 0) or free (bytes < 0) at `at_s` solo seconds into the iteration.
/// A free returns the most recent live allocation of the same size (what the replay matches on).
struct memory_step {
  double at_s = 0;
  std::int64_t bytes = 0;
  memory::alloc_kind kind = memory::alloc_kind::unknown;
  friend bool operator==(const memory_step&, const memory_step&) = default;
};

struct job_profile {
  std::string model;
  std::int64_t batch_size = 0;
  std::string source;  ///< "recorded on ..." or "generated for GPU ..."
  double setup_s = 0;  ///< from arrival to the first iteration (building the model)

  /// Allocated at setup and held until the job leaves: parameters, their gradients, optimizer
  /// state, buffers. Each entry one tensor (sizes in bytes).
  std::vector<std::size_t> persistent_tensors;
  std::vector<operation> operations;  ///< in order; their solo_s add up to the iteration
  std::vector<memory_step> steps;     ///< one iteration's allocations and frees, balanced

  /// The regions the job holds over a solo iteration (held_at_start includes the persistent
  /// regions), from the pool's own logic (sim::replay_regions) or from the recording.
  schedule::usage_curve held;
  std::size_t peak_live_bytes = 0;  ///< persistent + the most live at any moment
  /// A profile under a footprint plan: the plan's name ("tensile", or a variant's label) and
  /// what the cost model predicts it moves per iteration. Empty and 0 for a plain profile.
  std::string plan;
  runtime::plan_traffic traffic;

  [[nodiscard]] double solo_iteration_s() const;
  [[nodiscard]] std::size_t persistent_bytes() const;
};

}  // namespace tandem::sim
