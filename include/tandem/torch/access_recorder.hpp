#pragma once
// Records one iteration of a real libtorch job as a tensor access sequence (TENSILE §4.1): its
// operations with their measured starts and durations, and every tensor the iteration touches
// with its size, its creating operation (OTA), the operations that read it (ITAs) and when it is
// freed.
//
// Where each fact comes from, so that the model's code needs no tandem calls:
// - operations: libtorch's RecordFunction callbacks on the job's thread; the outermost aten
//   operator or autograd node is one operation (nested ones belong to it);
// - tensors and their lifetimes: the pool's trace (every allocation and free of the job, with
//   its rounded size), so the sequence itemizes exactly the memory the pool holds;
// - reads: the inputs RecordFunction reports, and the saved tensors autograd unpacks in the
//   backward pass (saved_tensor_hooks.hpp), which are not operator inputs there.
// Tensors the iteration reads but did not allocate (parameters, optimizer state, gradients kept
// between iterations) are persistent: held throughout, sized by their storage.
//
// For the executor (plan_executor.hpp) it also notes each tensor's allocation ordinal (how a
// later iteration's allocation is matched to it) and whether each operation can run again:
// an aten operator that writes no memory made before it started (its schema's mutable
// arguments) and whose every tensor that outlives it is an output or saved by autograd.

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/memory/trace.hpp"
#include "tandem/torch/passive_swapper.hpp"
#include "tandem/torch/saved_tensor_hooks.hpp"

namespace tandem::torch_support {

/// The storages of a recorded iteration's persistent tensors (parameters, buffers, optimizer
/// state), by tensor of its sequence: the same objects in every later iteration, so that an
/// executor can move them (plan_executor.hpp). Weak: the job may let them go.
using persistent_storages =
    std::unordered_map<std::size_t, c10::weak_intrusive_ptr<c10::StorageImpl>>;

class access_recorder final : public memory::trace_sink,
                              public saved_tensor_handler,
                              public relocation_observer {
 public:
  /// Records `job`'s allocations in `pool`. Events go on to `next` (the pool's sink before the
  /// recorder, or nullptr) so that whoever else watches the pool still sees them.
  access_recorder(memory::device_pool& pool, memory::job_id job,
                  memory::trace_sink* next = nullptr);
  ~access_recorder() override;
  access_recorder(const access_recorder&) = delete;
  access_recorder& operator=(const access_recorder&) = delete;

  /// Names a tensor that lives across iterations (a parameter, a buffer, a gradient kept between
  /// iterations, optimizer state) and says what it is; call before begin(). Persistent tensors
  /// not named are told apart by the phase that reads them first.
  void name_persistent(const at::Tensor& tensor, std::string name, footprint::tensor_role role);

  /// Starts recording on the calling thread (the job's): the pool's sink must be this recorder
  /// by now. The iteration's first phase is the forward pass.
  void begin();
  /// Marks where the backward pass and the optimizer step begin (the training loop knows). A
  /// loop that never calls it gets them inferred: the backward pass from the first autograd
  /// node, the optimizer step from the first operator after that pass (a loop that accumulates
  /// gradients over several passes has all after its first backward recorded as the step).
  void enter(footprint::phase phase);
  /// Stops recording and returns the iteration. Tensors still held are freed after the last
  /// operation.
  [[nodiscard]] footprint::access_sequence end(std::string model, std::int64_t batch_size);
  /// The storages of the persistent tensors of the iteration recorded last.
  [[nodiscard]] const persistent_storages& storages() const { return storages_; }

  void on_event(const memory::trace_event& event) override;
  [[nodiscard]] std::unique_ptr<torch::autograd::SavedVariableHooks> hooks_for_saved() override;

  // Called by the RecordFunction callbacks and the saved-tensor hooks of the recording thread.
  void operation_started(const at::RecordFunction& fn);
  void operation_ended(const at::RecordFunction& fn);
  void read(const c10::StorageImpl* storage);
  void saved(const at::Tensor& tensor);

  // A passive swapper's moves (passive_swapper.hpp): the iteration recorded is the one the job
  // would run with every tensor in place, its times without the moves.
  void moving() override;
  void moved(const c10::StorageImpl* storage, std::optional<std::size_t> from,
             std::optional<std::size_t> to, double seconds) override;
  void freed_while_out(const c10::StorageImpl* storage) override;

 private:
  using clock = std::chrono::steady_clock;
  [[nodiscard]] double seconds_since_begin() const;
  [[nodiscard]] std::size_t persistent_tensor(const c10::StorageImpl* storage);
  /// Whether `fn` writes a tensor (a mutable argument of its schema) that the outermost
  /// operation under way did not make: then running that operation again changes state.
  [[nodiscard]] bool writes_memory_made_before(const at::RecordFunction& fn) const;
  /// Marks not recomputable every earlier operation of the iteration whose tensor `fn` writes
  /// in place: running it again would not redo the write.
  void stop_recomputing_what_it_writes(const at::RecordFunction& fn);
  /// Sets the last operation of `sequence` (the one being recorded, or the finished one)'s
  /// scratch_peak_bytes from the allocations and frees since it began.
  void measure_scratch_of_last_operation(footprint::access_sequence& sequence);

  memory::device_pool& pool_;
  memory::job_id job_;
  memory::trace_sink* next_;
  bool recording_ = false;
  clock::time_point began_;
  std::uint64_t callback_handle_ = 0;
  int depth_ = 0;  ///< of nested operators: 1 inside an outermost one
  footprint::phase phase_ = footprint::phase::forward;
  bool phases_marked_ = false;  ///< by the loop (enter); else inferred
  footprint::access_sequence sequence_;
  /// Pool offset -> tensor, for the blocks this iteration allocated and has not freed.
  std::unordered_map<std::size_t, std::size_t> live_;
  /// Persistent tensors by storage (not by address: a passive swapper moves storages).
  std::unordered_map<const c10::StorageImpl*, std::size_t> persistent_;
  /// The job's live bytes when the iteration began, and those of them freed during it: what
  /// was held and no operation read (a parameter the model does not use, a buffer), and the
  /// pool's rounding of the blocks of what was read, is the sequence's other_bytes.
  std::size_t live_at_begin_ = 0;
  std::size_t freed_from_before_ = 0;
  persistent_storages storages_;  ///< of those made before the iteration (no gradients)
  /// Tensors of the iteration out of the pool (a passive swapper's), by storage.
  std::unordered_map<const c10::StorageImpl*, std::size_t> parked_;
  int moving_ = 0;      ///< nested moves under way: their pool events are not the iteration's
  double moved_s_ = 0;  ///< time the moves took, left out of the operations' times
  struct named {
    std::string name;
    footprint::tensor_role role;
  };
  std::unordered_map<const c10::StorageImpl*, named> names_;  ///< what the loop said it is
  std::vector<std::size_t> kept_gradients_;   ///< gradients that outlive the iteration
  std::vector<std::size_t> created_between_;  ///< allocated outside every operation: by the next
  std::size_t allocations_ = 0;               ///< made by the iteration so far
  /// Of the outermost operation under way: the tensors it made (pool offset, tensor) and the
  /// storages autograd saved while it ran, to tell whether running it again rebuilds all it
  /// leaves behind.
  std::vector<std::pair<std::size_t, std::size_t>> made_in_op_;
  std::vector<const void*> saved_in_op_;
  /// Since the last outermost operation began: (tensor, true) for each allocation, (tensor,
  /// false) for each free, in order. Which of them were scratch is known when the next begins.
  std::vector<std::pair<std::size_t, bool>> since_op_began_;
  std::unique_ptr<saved_tensor_scope> saved_scope_;
};

}  // namespace tandem::torch_support
