#pragma once
// Runs a footprint plan (footprint/plan.hpp) on a real libtorch job, transparently for the
// model: its code makes no tandem call.
//
// Design (why this route; docs/ARCHITECTURE.md, "Footprint reduction", has the longer note):
// - Storage-level replacement. A tensor of the plan is one allocation of the iteration, so one
//   c10::StorageImpl. Swapping it out copies the storage's bytes to host memory over the
//   device's copy channel and, once the copy is done, replaces the storage's DataPtr with the
//   host copy: the device block goes back to the pool, so swapped-out bytes leave the budget.
//   Swapping in allocates a block through the storage's own allocator (so a memory-aware policy
//   can make the job wait), copies the bytes back and replaces the DataPtr again. Every view of
//   the storage (autograd's saved tensors, the model's references) sees the change; no tensor
//   is rebuilt, so sizes, strides and offsets are untouched and two saved views of one storage
//   move once.
// - Finding the tensors. The recorder numbers a tensor by its allocation ordinal within the
//   iteration; the executor counts the job's allocations in the pool's trace and so knows the
//   pool block of each tensor of the plan. Its StorageImpl is met where it is used: the inputs
//   and outputs of operations (RecordFunction) and the tensors autograd saves (the saved-tensor
//   hooks of saved_tensor_hooks.hpp, the C++ route to PyTorch's saved-tensor hooks).
//   Persistent tensors (parameters, optimizer state) were made before the iteration: the
//   recorder hands their storages over (access_recorder::storages()), the same objects in
//   every iteration, and a swap-in of one allocates as persistent memory.
// - Across iterations. A parameter or optimizer state swapped across the boundary (a `wraps`
//   decision: out after the optimizer's step, back before its first read of the next
//   iteration) stays out when the iteration ends, its copy out perhaps still under way, and
//   the next iteration under this executor brings it back. Between iterations its storage
//   points at host memory: code that reads it there (on the CPU backend, correctly) reads the
//   copy; code that writes it in place between iterations is outside the plan's contract.
//   The first planned iteration holds it from its start, as nothing was swapped before it.
// - Timing. Operations are counted as the recorder counts them (the outermost aten operator or
//   autograd node), so a plan's triggers (an operation plus a delay after its start) and
//   accesses map to this iteration's operations.
// - Safety. Before any operation reads a tensor of the plan, and whenever autograd unpacks one,
//   the executor makes it present: a late prefetch stalls the consumer (counted as stall time),
//   and a dropped tensor is rebuilt on the spot. Nothing computes on missing data. So a tensor
//   may also leave out of turn, when an allocation would otherwise fail (relieve): one that the
//   outermost operation under way does not read (its RecordFunction inputs, what autograd
//   unpacked for it, and what the sequence says it reads or makes) and that the sequence reads
//   again only after the tensor being allocated for.
// - Recompute. A dropped tensor's creating operation (an aten operator the recorder found
//   recomputable) is called again through the dispatcher with the inputs it had, with autograd
//   on so that the tensors it saves come back too, and with the CPU generator's state of the
//   original call (dropout draws the same mask). The rerun's allocations are matched to the
//   original ones by ordinal; each rebuilt tensor's block moves into the original storage.
//   An input changed in place since the original call makes the rerun refuse (runtime error)
//   rather than compute something else.
// An iteration whose allocations stop matching the sequence (another batch size, a new code
// path) is diverged: the executor stops releasing tensors for the rest of it and counts it.
// Only the CPU generator is replayed: recomputing random operations of CUDA jobs needs the
// CUDA generator's offset too (GPU jobs do not run in the runtime yet).

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tandem/device/copy_channel.hpp"
#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/memory/trace.hpp"
#include "tandem/torch/access_recorder.hpp"
#include "tandem/torch/passive_swapper.hpp"
#include "tandem/torch/saved_tensor_hooks.hpp"

namespace tandem::torch_support {

/// What the executor did, summed over the iterations it ran.
struct execution_stats {
  std::size_t iterations = 0;
  std::size_t swapped_out_bytes = 0;  ///< copied to host memory and released on the device
  std::size_t swapped_in_bytes = 0;   ///< copied back
  std::size_t swaps = 0;              ///< swap stretches carried out
  std::size_t recomputations = 0;     ///< tensors rebuilt by running their operation again
  /// The job waiting for copies: ones it needed, and at an iteration's end those still under
  /// way (copies out of tensors needed back before the copy finished).
  double stall_s = 0;
  double recompute_s = 0;  ///< running operations again
  std::size_t missed = 0;  ///< decisions not carried out: the tensor was not met in time
  /// Swaps called off: the tensor was due back (its prefetch's trigger, or its reader) before
  /// its copy out was done, so it stayed (plan.hpp, decision).
  std::size_t called_off = 0;
  std::size_t diverged_iterations = 0;  ///< iterations that stopped matching the sequence
  /// Tensors swapped out of turn to make room for an allocation that would have failed
  /// (relieve), and their bytes (also counted in swapped_out_bytes).
  std::size_t evictions = 0;
  std::size_t evicted_bytes = 0;
  /// Tensors needed back when no memory would come (the job would have failed): their readers
  /// read them in host memory instead, and their bytes.
  std::size_t host_reads = 0;
  std::size_t host_read_bytes = 0;

  /// Adds what another executor did (a job's executors of successive plans).
  execution_stats& operator+=(const execution_stats& other) {
    iterations += other.iterations;
    swapped_out_bytes += other.swapped_out_bytes;
    swapped_in_bytes += other.swapped_in_bytes;
    swaps += other.swaps;
    recomputations += other.recomputations;
    stall_s += other.stall_s;
    recompute_s += other.recompute_s;
    missed += other.missed;
    called_off += other.called_off;
    diverged_iterations += other.diverged_iterations;
    evictions += other.evictions;
    evicted_bytes += other.evicted_bytes;
    host_reads += other.host_reads;
    host_read_bytes += other.host_read_bytes;
    return *this;
  }
};

namespace detail {
struct executor_state;
}

class plan_executor final : public memory::trace_sink,
                            public saved_tensor_handler,
                            public relocation_observer,
                            public storage_claims,
                            public memory::pressure_relief {
 public:
  /// Runs `plan` (made for `sequence`, a recorded one) on `job`'s iterations; copies go over
  /// `channel`. Events go on to `next` (the pool's sink before, or nullptr). `persistent`: the
  /// storages of the sequence's persistent tensors (access_recorder::storages()), which the
  /// plan may then swap, within an iteration or across its boundary. Throws config_error for a
  /// plan that does not fit the sequence, or that decides on a tensor the executor cannot
  /// locate (no allocation ordinal and no storage: generated sequences cannot be executed).
  plan_executor(memory::device_pool& pool, memory::job_id job, device::copy_channel& channel,
                footprint::access_sequence sequence, footprint::plan plan,
                memory::trace_sink* next = nullptr, persistent_storages persistent = {});
  ~plan_executor() override;
  plan_executor(const plan_executor&) = delete;
  plan_executor& operator=(const plan_executor&) = delete;

  /// Starts an iteration on the calling thread (the job's); the pool's trace must reach this
  /// executor (it or a sink forwarding to it) from here until end().
  void begin();
  /// Ends it: every copy under way is finished, every tensor still alive is present again, but
  /// for those swapped across the boundary (Note [Stretches across iterations]): they stay out,
  /// their copy out perhaps still under way, until the next iteration needs them. A parameter
  /// for which no memory comes stays in host memory too, carried into the next iteration,
  /// whose readers bring it back. When an iteration cut short cannot bring its tensors back
  /// (its restart owed), the rest stay out too, carried, and the error is thrown; the executor
  /// can begin again.
  void end();
  /// Brings back what the last iteration left out across its boundary, on the job's thread
  /// between iterations: before another executor (a new plan), or none, runs the next one.
  /// With `next` (the job's executor of its next plan, on the same sequence), what finds no
  /// memory stays in host memory and passes to it, whose readers bring it back.
  void bring_back(plan_executor* next = nullptr);

  [[nodiscard]] const execution_stats& stats() const { return stats_; }
  [[nodiscard]] const footprint::plan& plan() const;
  /// How long each operation of the last iteration computed (seconds, from after its stalls
  /// and recomputations to its end), one per operation of the sequence, for TENSILE's online
  /// re-planning and for pricing a plan again at the times it runs at; empty when that
  /// iteration did not match the sequence.
  [[nodiscard]] const std::vector<double>& measured_durations() const;
  /// Whether to measure them (on by default; set between iterations). Off, a plan that moves
  /// nothing, with nothing out from the last iteration, runs iterations without following
  /// their operations (no callback at all), and measured_durations() stays empty.
  void measure_durations(bool on);

  void on_event(const memory::trace_event& event) override;
  [[nodiscard]] std::unique_ptr<torch::autograd::SavedVariableHooks> hooks_for_saved() override;

  // Called by the RecordFunction callbacks and the saved-tensor hooks of the job's thread.
  void operation_started(const at::RecordFunction& fn);
  void operation_ended(const at::RecordFunction& fn);
  void packed(const at::Tensor& tensor);
  void unpacking(const at::Tensor& tensor);

  // A passive swapper as the fallback beside the plan (passive_swapper.hpp): its moves are not
  // the iteration's allocations, and the plan's tensors are this executor's to move.
  void moving() override;
  void moved(const c10::StorageImpl* storage, std::optional<std::size_t> from,
             std::optional<std::size_t> to, double seconds) override;
  void freed_while_out(const c10::StorageImpl* /*storage*/) override {}
  [[nodiscard]] bool claims(const c10::StorageImpl* storage) const override;

  /// The job's pressure relief during an iteration: only instead of failing, it swaps a tensor
  /// of the plan out of turn (see Safety above): the one read again latest that nothing under
  /// way reads. A job that a policy would otherwise fail (every running iteration waiting for
  /// another, none able to restart) goes on a little slower instead.
  [[nodiscard]] bool relieve(memory::job_id job, std::size_t bytes,
                             memory::relief_moment moment) override;

 private:
  void start_operation(const at::RecordFunction& fn);
  void end_operation(const at::RecordFunction& fn);
  /// end() found no room to bring the iteration's tensors back: it carries what is out into
  /// the next iteration and lets another begin().
  void abandon_iteration() noexcept;
  void rethrow_failure();

  std::unique_ptr<detail::executor_state> state_;
  execution_stats stats_;
};

}  // namespace tandem::torch_support
