#pragma once
// Capuchin's passive mode (Peng et al., ASPLOS'20, §4.2): while a job's access pattern is not
// known yet (the iterations a planned job warms up, is recorded and is measured in), an
// allocation that finds no memory in the budget swaps the job's own least recently used tensors
// out to host memory until it fits, and a tensor that is out comes back before any operation
// reads it. A job can then be recorded, and so planned, under a budget below its vanilla peak.
//
// How, on stock libtorch (the plan executor's route, plan_executor.hpp):
// - Candidates are the storages in the job's pool memory that the operations of the iteration
//   made or read, met through RecordFunction on the job's thread, ordered by last use.
// - The pool asks the swapper (memory::pressure_relief) when an allocation finds no memory, on
//   the allocating thread with no pool lock held. The swapper copies the least recently used
//   candidate to host memory over the device's copy channel, waits for it, and replaces the
//   storage's DataPtr with the host copy: its block goes back to the pool. Storages an operation
//   under way reads (at any nesting depth) are never chosen: that operation may hold their
//   address.
// - Every operation's inputs are made present when it starts (allocated through the storage's
//   own allocator, copied back, DataPtr replaced), so nothing computes on a copy out of the pool.
// - A recorder told of the moves (relocation_observer) ignores the swapper's own allocations and
//   frees, follows a tensor to its new block, and leaves the moves' time out of its operations.
//   A plan executor told of them ignores them too, and claims its own tensors (storage_claims):
//   beside a plan that does not quite fit, the swapper is the fallback for the rest.

#include <ATen/record_function.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "tandem/device/copy_channel.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/memory/pressure_relief.hpp"

namespace c10 {
struct StorageImpl;
}

namespace tandem::torch_support {

/// Told of every move the swapper makes on the calling thread (the job's).
class relocation_observer {
 public:
  virtual ~relocation_observer() = default;
  /// The pool events of this thread from here to the matching moved() are the swapper's copies.
  virtual void moving() = 0;
  /// `storage` left the pool from the block at offset `from`, or came back into the block at
  /// offset `to`; the move took `seconds`.
  virtual void moved(const c10::StorageImpl* storage, std::optional<std::size_t> from,
                     std::optional<std::size_t> to, double seconds) = 0;
  /// `storage` was freed while out of the pool.
  virtual void freed_while_out(const c10::StorageImpl* storage) = 0;
};

/// Storages another component moves itself (a plan executor's tensors): the swapper leaves them.
class storage_claims {
 public:
  virtual ~storage_claims() = default;
  [[nodiscard]] virtual bool claims(const c10::StorageImpl* storage) const = 0;
};

/// What the swapper did, summed over the iterations it ran.
struct passive_stats {
  std::size_t swapped_out_bytes = 0;
  std::size_t swapped_in_bytes = 0;
  std::size_t evictions = 0;  ///< storages swapped out
  double moving_s = 0;        ///< the job waiting for its own copies
};

namespace detail {
struct passive_state;
}

class passive_swapper final : public memory::pressure_relief {
 public:
  /// Swaps `job`'s tensors in `pool` over `channel`.
  passive_swapper(memory::device_pool& pool, memory::job_id job, device::copy_channel& channel);
  /// Stops as end() does, but leaves what is still out on the host (its data intact) rather
  /// than allocate on the way out of an iteration cut short.
  ~passive_swapper() override;
  passive_swapper(const passive_swapper&) = delete;
  passive_swapper& operator=(const passive_swapper&) = delete;

  /// Starts an iteration on the calling thread (the job's): the pool asks this swapper when the
  /// job's allocations find no memory, and `observer` (may be null) is told of the moves. What
  /// `claimed` (may be null) claims is never swapped out: a plan executor running beside this
  /// swapper as its fallback moves its own tensors. `as_fallback`: it runs as the iteration's
  /// last resort (once memory has proved short, beside whatever the job runs), not as
  /// Capuchin's passive mode, so it swaps only where no wait would bring memory (relieve).
  void begin(relocation_observer* observer = nullptr, const storage_claims* claimed = nullptr,
             bool as_fallback = false);
  /// Ends it: every storage still out and alive comes back into the pool. Rethrows what an
  /// operation's start met (an input that found no room to come back in). When there is no room
  /// for them (it throws out_of_memory_error), those left out come back when the next iteration
  /// this swapper runs reads them.
  void end();
  [[nodiscard]] bool active() const;

  [[nodiscard]] const passive_stats& stats() const { return stats_; }

  /// Swaps out the least recently used storage it may move, at either moment. As a fallback,
  /// or beside a plan (the job had a relief when this swapper began: the plan executor it falls
  /// back for), only at the last (instead_of_failing), and only once that executor has nothing
  /// to give: the plan's own tensors, whose next reads it knows, go before what no plan priced,
  /// and waiting for the others' memory goes before copies at PCIe speed (a plain VGG-16
  /// iteration beside two jobs under scrooge took 2.26 s swapping, against 0.24 s plain).
  [[nodiscard]] bool relieve(memory::job_id job, std::size_t bytes,
                             memory::relief_moment moment) override;

  // Called by the RecordFunction callbacks of the job's thread.
  void operation_started(const at::RecordFunction& fn);
  void operation_ended(const at::RecordFunction& fn);

 private:
  void start_operation(const at::RecordFunction& fn);
  void stop();

  std::unique_ptr<detail::passive_state> state_;
  passive_stats stats_;
};

}  // namespace tandem::torch_support
