#include "tandem/torch/plan_executor.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <set>
#include <string>
#include <utility>

#include "for_each_tensor.hpp"
#include "operation_callbacks.hpp"
#include "tandem/common/error.hpp"
#include "tandem/memory/fallback_scope.hpp"
#include "tandem/memory/no_wait_scope.hpp"
#include "tandem/torch/job_binding.hpp"

namespace tandem::torch_support {

namespace {

using clock = std::chrono::steady_clock;
using storage_ref = c10::weak_intrusive_ptr<c10::StorageImpl>;

thread_local plan_executor* executing = nullptr;

/// A CPU generator's whole state: what a dropout or a randint draws next.
struct generator_state {
  at::Generator generator;
  at::mt19937 engine;
  std::optional<float> next_float;
  std::optional<double> next_double;
};

generator_state save_generator(at::Generator generator) {
  std::lock_guard lock(generator.mutex());
  auto* cpu = at::check_generator<at::CPUGeneratorImpl>(generator);
  generator_state state{generator, cpu->engine(), std::nullopt, std::nullopt};
  if (const auto f = cpu->next_float_normal_sample()) state.next_float = *f;
  if (const auto d = cpu->next_double_normal_sample()) state.next_double = *d;
  return state;
}

void restore_generator(const generator_state& state) {
  auto generator = state.generator;
  std::lock_guard lock(generator.mutex());
  auto* cpu = at::check_generator<at::CPUGeneratorImpl>(generator);
  cpu->set_engine(state.engine);
  cpu->set_next_float_normal_sample(state.next_float ? c10::optional<float>(*state.next_float)
                                                     : c10::nullopt);
  cpu->set_next_double_normal_sample(state.next_double ? c10::optional<double>(*state.next_double)
                                                       : c10::nullopt);
}

/// The states of the generators a call may draw from: the default CPU generator, and any it
/// is given (the zoo's batches come from seeded generators of their own).
std::vector<generator_state> save_generators(const std::vector<c10::IValue>& inputs) {
  std::vector<generator_state> states{save_generator(at::detail::getDefaultCPUGenerator())};
  for (const auto& input : inputs) {
    if (input.isGenerator() && input.toGenerator().device().is_cpu())
      states.push_back(save_generator(input.toGenerator()));
  }
  return states;
}

/// A DataPtr owning (a share of) a host buffer: a swapped-out storage points at its copy.
c10::DataPtr host_data(std::shared_ptr<device::host_buffer> buffer, c10::Device device) {
  auto* owner = new std::shared_ptr<device::host_buffer>(std::move(buffer));
  return {(*owner)->data(), owner,
          [](void* context) { delete static_cast<std::shared_ptr<device::host_buffer>*>(context); },
          device};
}

using detail::for_each_tensor;

/// Sets a field of the executor's state for the rest of a scope and puts back what it held
/// before, so that nested scopes (a swap-in whose allocation makes room by swapping another
/// tensor out) keep the outer scope's value.
template <class T>
class scoped_value {
 public:
  scoped_value(T& field, T value)
      : field_(field), before_(std::exchange(field, std::move(value))) {}
  ~scoped_value() { field_ = std::move(before_); }
  scoped_value(const scoped_value&) = delete;
  scoped_value& operator=(const scoped_value&) = delete;

 private:
  T& field_;
  T before_;
};

/// The executor's own allocations and frees until the scope ends (executor_state::internal).
class own_moves : public scoped_value<bool> {
 public:
  explicit own_moves(bool& internal) : scoped_value(internal, true) {}
};

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (executing != nullptr) executing->operation_started(fn);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* /*context*/) {
  if (executing != nullptr) executing->operation_ended(fn);
}

/// Holds what autograd saves, as autograd would, and tells the executor when it is packed and
/// unpacked.
class executor_hooks final : public torch::autograd::SavedVariableHooks {
 public:
  void call_pack_hook(const at::Tensor& tensor) override {
    // Detached: autograd hands an operation's own output over with its grad_fn, the node that
    // owns these hooks, and holding that would be a cycle no failed backward pass breaks.
    // Unpacking reattaches the grad_fn from what autograd kept aside.
    saved_ = tensor.detach();
    if (executing != nullptr) executing->packed(tensor);
  }
  at::Tensor call_unpack_hook() override {
    if (executing != nullptr) executing->unpacking(saved_);
    return saved_;
  }

 private:
  at::Tensor saved_;
};

/// Keeps what a rerun saves, so that its blocks can move into the original storages.
class capturing_hooks final : public torch::autograd::SavedVariableHooks {
 public:
  explicit capturing_hooks(std::vector<at::Tensor>& captured) : captured_(captured) {}
  void call_pack_hook(const at::Tensor& tensor) override {
    saved_ = tensor.detach();  // no cycle through the rerun's nodes (see executor_hooks)
    captured_.push_back(saved_);
  }
  at::Tensor call_unpack_hook() override { return saved_; }

 private:
  std::vector<at::Tensor>& captured_;
  at::Tensor saved_;
};

}  // namespace

namespace detail {

enum class residence : std::uint8_t { present, going_out, out, coming_in, dropped };

constexpr bool copy_under_way(residence where) {
  return where == residence::going_out || where == residence::coming_in;
}

/// One tensor of the plan in the running iteration.
struct tracked_tensor {
  std::optional<storage_ref> storage;  ///< met, and not freed by the framework yet
  residence where = residence::present;
  std::shared_ptr<device::host_buffer> host;  ///< the copy, while going out, out or coming in
  device::event_ptr copy;                     ///< the copy under way
  c10::DataPtr incoming;                      ///< the block a swap-in fills
  std::size_t bytes = 0;                      ///< of the storage when it left
};

/// An operation whose tensors a plan recomputes, as it was called this iteration.
struct call_record {
  std::optional<c10::OperatorHandle> op;
  std::vector<c10::IValue> inputs;
  std::vector<std::pair<at::Tensor, std::int64_t>> versions;  ///< input tensors, their version
  std::vector<generator_state> generators;  ///< as they were, for a random operation
  std::size_t first_allocation = 0;         ///< the iteration's allocation count when it started
  std::size_t reruns_left = 0;              ///< recompute decisions still to rebuild from it
};

struct timed_decision {
  std::size_t decision = 0;
  footprint::trigger when;
};

struct executor_state {
  memory::device_pool& pool;
  memory::job_id job;
  device::copy_channel& channel;
  footprint::access_sequence sequence;
  footprint::plan plan;
  memory::trace_sink* next;

  // From the plan, by operation: what happens at its start and at its end.
  std::vector<std::vector<std::size_t>> released_at_end;  ///< decisions
  /// Decisions on persistent tensors out from the iteration's start (released after access 0):
  /// released when the iteration begins, their copy out issued at its trigger.
  std::vector<std::size_t> released_at_begin;
  /// No iteration has begun yet: the stretches across the boundary have not left.
  bool fresh = true;
  std::vector<std::vector<std::size_t>> needed_at_start;  ///< decisions
  std::vector<std::vector<std::size_t>> swap_in_at;       ///< swap decisions by swap_in.op
  std::vector<std::size_t> recomputes_from;               ///< recompute decisions by creator
  std::vector<std::optional<std::size_t>> tensor_of_allocation;
  /// Persistent tensors of the plan, by tensor: found by storage, not by allocation.
  persistent_storages persistent;
  std::vector<bool> wrapped;  ///< by tensor: swapped across the iteration boundary

  /// Tensors that stayed out (or were going out) when the last iteration ended, for the next.
  std::unordered_map<std::size_t, tracked_tensor> carried;
  /// The tensors of `tensors` that are not present (out, going out or in, dropped), in order.
  std::set<std::size_t> away;
  /// Those of `away` with a copy under way (going out or coming in): every operation's start
  /// and end polls them, and walking all of `away` there (dropped and out tensors included)
  /// was a fifth to a third of the executor's instructions (callgrind, README).
  std::set<std::size_t> copying;

  // The running iteration.
  std::thread::id thread;
  at::CallbackHandle callbacks = 0;
  bool measuring = true;  ///< whether measured_durations() is wanted
  bool observed = false;  ///< the running iteration's operations are followed (callbacks)
  std::unique_ptr<saved_tensor_scope> saved_scope;
  std::size_t op = 0;     ///< operations started so far
  int depth = 0;          ///< operators under way (nested ones are not followed)
  bool internal = false;  ///< allocations and frees of the executor's own
  int passive_moves = 0;  ///< a fallback passive swapper's moves under way
  bool replaying = false;
  bool ending = false;  ///< end() brings tensors back: none may leave out of turn
  /// What the outermost operation under way reads: its inputs' storages, and the tensors of
  /// the plan autograd unpacked for it. None may leave out of turn (its kernels may hold their
  /// address). RecordFunction hands the inputs over only at the operation's start.
  std::vector<const c10::StorageImpl*> reading;
  std::vector<std::size_t> unpacked;
  /// The tensor a swap-in is allocating for, while it allocates.
  std::optional<std::size_t> bringing;
  bool diverged = false;
  std::exception_ptr failure;  ///< thrown where libtorch would swallow it, for later
  std::size_t allocations = 0;
  std::vector<clock::time_point> started;
  /// When each operation began computing (after its stalls and recomputations), and how long
  /// it computed; measured_s is handed out once the iteration matched its sequence.
  std::vector<clock::time_point> computing;
  std::vector<double> computed_s;
  std::vector<double> measured_s;
  mutable std::mutex mutex;  ///< guards `live` (trace events may come from other threads)
  std::unordered_map<const void*, std::size_t> live;  ///< block -> tensor, plan tensors only
  std::unordered_map<const c10::StorageImpl*, std::size_t> by_storage;
  std::unordered_map<std::size_t, tracked_tensor> tensors;
  std::unordered_map<std::size_t, call_record> calls;  ///< by operation
  std::vector<timed_decision> pending_out;
  std::vector<timed_decision> pending_in;
  /// By decision: called off this iteration (its tensor was due back before it had left).
  std::vector<bool> called_off;
  /// Copies whose storage no longer needs them, kept until they complete.
  std::vector<std::pair<device::event_ptr, std::shared_ptr<device::host_buffer>>> finishing;
  std::vector<const void*> rerun_allocations;
  std::vector<at::Tensor> rerun_saved;

  executor_state(memory::device_pool& p, memory::job_id j, device::copy_channel& c,
                 footprint::access_sequence s, footprint::plan pl, memory::trace_sink* n,
                 persistent_storages storages)
      : pool(p),
        job(j),
        channel(c),
        sequence(std::move(s)),
        plan(std::move(pl)),
        next(n),
        persistent(std::move(storages)) {}

  /// Tensor `t` is now `where`: `away` and `copying` follow it.
  void index(std::size_t t, residence where) {
    if (where == residence::present) {
      away.erase(t);
    } else {
      away.insert(t);
    }
    if (copy_under_way(where)) {
      copying.insert(t);
    } else {
      copying.erase(t);
    }
  }

  /// Forgets the iteration's tensors, with their indexes.
  void clear_tensors() {
    tensors.clear();
    away.clear();
    copying.clear();
  }
};

}  // namespace detail

namespace {

using detail::residence;

class executor_ops {
 public:
  executor_ops(detail::executor_state& s, execution_stats& stats) : s_(s), stats_(stats) {}

  /// The tensor of the plan that `storage` holds, registering the storage when met first.
  std::optional<std::size_t> tensor_of(const c10::StorageImpl* storage) {
    if (const auto found = s_.by_storage.find(storage); found != s_.by_storage.end())
      return found->second;
    const void* data = storage->data_ptr().get();
    std::size_t t = 0;
    {
      std::lock_guard lock(s_.mutex);
      const auto live = s_.live.find(data);
      if (live == s_.live.end()) return std::nullopt;
      t = live->second;
    }
    auto& tracked = s_.tensors[t];
    tracked.storage.emplace(
        c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(const_cast<c10::StorageImpl*>(storage)));
    s_.by_storage[storage] = t;
    return t;
  }

  /// Whether a tensor of the plan is out now: only then must inputs be checked.
  [[nodiscard]] bool any_out() const { return !s_.away.empty(); }

  /// Tensor `t` is now `where`; `away` follows it, so that no operation scans every tensor.
  void place(std::size_t t, residence where) {
    s_.tensors[t].where = where;
    s_.index(t, where);
  }

  /// Whether a block of the plan awaits its storage: only then are outputs worth looking at.
  [[nodiscard]] bool any_to_meet() const {
    std::lock_guard lock(s_.mutex);
    return !s_.live.empty();
  }

  void meet(const at::Tensor& tensor) {
    if (!tensor.defined() || !tensor.has_storage()) return;
    const auto* storage = tensor.storage().unsafeGetStorageImpl();
    if (const auto t = tensor_of(storage)) make_present(*t, true);
  }

  /// The storage of tensor `t` if it is still alive.
  c10::intrusive_ptr<c10::StorageImpl> storage_of(std::size_t t) {
    auto& tracked = s_.tensors[t];
    if (!tracked.storage) return {};
    return tracked.storage->lock();
  }

  void finish_copies() {
    std::erase_if(s_.finishing, [](const auto& f) { return f.first->query(); });
    if (s_.copying.empty()) return;
    // Completing a copy takes its tensor out of `copying`: walk a copy of it.
    const std::vector<std::size_t> copying(s_.copying.begin(), s_.copying.end());
    for (const auto t : copying) {
      auto& tracked = s_.tensors[t];
      if (tracked.where == residence::going_out && tracked.copy->query()) {
        complete_out(t);
      } else if (tracked.where == residence::coming_in && tracked.copy->query()) {
        complete_in(t);
      }
    }
  }

  void release(std::size_t k) {
    const auto& d = s_.plan.decisions[k];
    if (d.what == footprint::action::recompute) {
      drop(d.tensor);
    } else if (!s_.called_off[k]) {
      s_.pending_out.push_back({k, d.swap_out});
    }
  }

  /// Decision `k`'s tensor is due back before it has left (its copy out not issued yet, or
  /// its release access not done): the swap is called off, the tensor stays, as the cost model
  /// prices it. A stretch across the boundary is not: it leaves at the iteration's end anyway.
  void call_off(std::size_t k) {
    std::erase_if(s_.pending_out, [k](const detail::timed_decision& p) { return p.decision == k; });
    s_.called_off[k] = true;
    ++stats_.called_off;
  }

  /// Issues the timed swaps whose trigger has come.
  void issue_due() {
    const auto now = clock::now();
    const auto due = [&](const footprint::trigger& when) {
      if (when.op + 1 > s_.op) return false;  // not started yet
      return now >= s_.started[when.op] + std::chrono::duration_cast<clock::duration>(
                                              std::chrono::duration<double>(when.delay_s));
    };
    // Issued ones leave the list; swap_out and swap_in never add to it. A prefetch that finds
    // no memory free now stays, to be tried again at the next operation (or brought back by
    // its reader): it does not wait, nor make room, for a tensor not needed yet.
    const auto issue = [&](std::vector<detail::timed_decision>& pending, auto&& start) {
      std::erase_if(pending, [&](const detail::timed_decision& p) {
        return due(p.when) && start(p.decision);
      });
    };
    issue(s_.pending_out, [this](std::size_t k) {
      swap_out(s_.plan.decisions[k].tensor);
      return true;
    });
    issue(s_.pending_in, [this](std::size_t k) {
      const auto& d = s_.plan.decisions[k];
      const auto found = s_.tensors.find(d.tensor);
      const bool left = found != s_.tensors.end() && (found->second.where == residence::out ||
                                                      found->second.where == residence::going_out);
      if (!d.wraps && !left) {
        call_off(k);
        return true;
      }
      return swap_in(d.tensor, false);
    });
  }

  void swap_out(std::size_t t) {
    auto& tracked = s_.tensors[t];
    const auto storage = storage_of(t);
    if (!storage || storage->allocator() == nullptr || tracked.where != residence::present ||
        s_.diverged) {
      if (!storage || storage->allocator() == nullptr) ++stats_.missed;
      return;
    }
    tracked.bytes = storage->nbytes();
    tracked.host = std::shared_ptr<device::host_buffer>(s_.channel.host_memory(tracked.bytes));
    tracked.copy = s_.channel.copy(tracked.host->data(), storage->data_ptr().get(), tracked.bytes);
    place(t, residence::going_out);
  }

  void complete_out(std::size_t t) {
    auto& tracked = s_.tensors[t];
    if (const auto storage = storage_of(t)) {
      {
        const own_moves own(s_.internal);
        // The old DataPtr dies here: its block goes back to the pool.
        static_cast<void>(storage->set_data_ptr(host_data(tracked.host, storage->device())));
      }
      place(t, residence::out);
      stats_.swapped_out_bytes += tracked.bytes;
      ++stats_.swaps;
    } else {
      place(t, residence::present);  // freed meanwhile: nothing to bring back
    }
    tracked.copy.reset();
  }

  /// Brings tensor `t` back: `needed` now (its reader waits for it), or ahead of its reader (a
  /// prefetch: false when no memory is free for it now, to be tried again).
  bool swap_in(std::size_t t, bool needed) {
    auto& tracked = s_.tensors[t];
    if (tracked.where == residence::going_out) {
      // Still on the device: keep it there and let the copy finish unused (called off).
      s_.finishing.emplace_back(std::move(tracked.copy), std::move(tracked.host));
      place(t, residence::present);
      ++stats_.called_off;
      return true;
    }
    if (tracked.where != residence::out) return true;
    const auto storage = storage_of(t);
    if (!storage) return true;
    {
      const own_moves own(s_.internal);
      // A parameter or optimizer state comes back to stay: among persistent memory, not in the
      // regions the iteration's feature maps come and go from.
      std::optional<kind_scope> persistent;
      if (!s_.sequence.tensors[t].created_by) persistent.emplace(memory::alloc_kind::persistent);
      std::optional<memory::no_wait_scope> ahead;
      if (!needed) ahead.emplace();
      // Should the allocation have to make room, only tensors read after this one may go.
      const scoped_value<std::optional<std::size_t>> bringing(s_.bringing, t);
      try {
        tracked.incoming = storage->allocator()->allocate(tracked.bytes);
      } catch (const memory::out_of_memory_error& refused) {
        if (needed || !refused.report().put_off) throw;
        return false;
      }
    }
    tracked.copy = s_.channel.copy(tracked.incoming.get(), tracked.host->data(), tracked.bytes);
    place(t, residence::coming_in);
    return true;
  }

  void complete_in(std::size_t t) {
    auto& tracked = s_.tensors[t];
    if (const auto storage = storage_of(t)) {
      static_cast<void>(storage->set_data_ptr(std::move(tracked.incoming)));
      stats_.swapped_in_bytes += tracked.bytes;
    } else {
      const own_moves own(s_.internal);
      tracked.incoming = c10::DataPtr();
    }
    tracked.host.reset();
    tracked.copy.reset();
    place(t, residence::present);
  }

  void drop(std::size_t t) {
    auto& tracked = s_.tensors[t];
    const auto storage = storage_of(t);
    if (!storage || tracked.where != residence::present || s_.diverged) {
      if (!storage) ++stats_.missed;
      return;
    }
    tracked.bytes = storage->nbytes();
    {
      const own_moves own(s_.internal);
      static_cast<void>(storage->set_data_ptr(c10::DataPtr(nullptr, storage->device())));
    }
    place(t, residence::dropped);
  }

  /// Decision `k`'s tensor is needed now: a swap not issued yet is cancelled, and the tensor
  /// comes back if it is out.
  void settle(std::size_t k) {
    const auto is_k = [k](const detail::timed_decision& p) { return p.decision == k; };
    std::erase_if(s_.pending_out, is_k);
    std::erase_if(s_.pending_in, is_k);
    make_present(s_.plan.decisions[k].tensor, true);
  }

  /// Makes room for an allocation that would otherwise fail (no wait would serve): finishes
  /// the copies under way (out: their blocks go; in: their tensors may leave again), or else
  /// swaps one present tensor of the plan out now, out of turn, and waits for its copy. The
  /// victim is the one read again latest (Belady's choice: the sequence says when), among
  /// those no operation under way reads and, when the allocation brings a tensor in, read only
  /// after that one. It comes back, as any tensor out, before its next reader. Returns false
  /// when there is none.
  bool evict_one() {
    // Waiting for the copies under way frees memory at no new cost.
    bool freed = false;
    const std::vector<std::size_t> copying(s_.copying.begin(), s_.copying.end());
    for (const auto t : copying) {
      auto& tracked = s_.tensors[t];
      await_copy(tracked);
      if (tracked.where == residence::going_out) {
        complete_out(t);
        freed = true;
      } else {
        complete_in(t);
      }
    }
    if (freed) return true;
    if (s_.diverged || s_.op == 0) return false;  // the sequence no longer says what comes
    const std::size_t current = s_.op - 1;        // the outermost operation under way
    // A read at `current` or earlier no longer counts: what may go must be read after `need`.
    std::size_t need = current;
    if (s_.bringing) {
      // Read by the operation under way (needed now) or later (a prefetch).
      const auto& reads = s_.sequence.tensors[*s_.bringing].read_by;
      const auto first = std::ranges::lower_bound(reads, current);
      need = first == reads.end() ? s_.sequence.operations.size() : *first;
    }
    std::optional<std::size_t> victim;
    std::size_t victim_read = 0;
    std::size_t victim_bytes = 0;
    for (const auto& [t, tracked] : s_.tensors) {
      if (tracked.where != residence::present || std::ranges::count(s_.unpacked, t) > 0) continue;
      const auto storage = storage_of(t);
      if (!storage || storage->allocator() == nullptr || storage->nbytes() == 0) continue;
      if (std::ranges::count(s_.reading, storage.get()) > 0) continue;
      const auto read = next_read(t, current);
      if (!read || *read <= need) continue;
      if (!victim || *read > victim_read ||
          (*read == victim_read && storage->nbytes() > victim_bytes)) {
        victim = t;
        victim_read = *read;
        victim_bytes = storage->nbytes();
      }
    }
    if (!victim) return false;
    swap_out(*victim);
    auto& tracked = s_.tensors[*victim];
    if (tracked.where != residence::going_out) return false;
    await_copy(tracked);
    complete_out(*victim);
    stats_.evicted_bytes += tracked.bytes;
    ++stats_.evictions;
    return true;
  }

  /// The first operation after `current` that reads tensor `t` (one past the last operation
  /// when none does: a persistent tensor is read next in the next iteration), or none when
  /// `current` makes or reads it.
  [[nodiscard]] std::optional<std::size_t> next_read(std::size_t t, std::size_t current) const {
    const auto& x = s_.sequence.tensors[t];
    if (x.created_by == current) return std::nullopt;
    const auto later = std::ranges::upper_bound(x.read_by, current);
    if (later != x.read_by.begin() && *std::prev(later) == current) return std::nullopt;
    return later == x.read_by.end() ? s_.sequence.operations.size() : *later;
  }

  /// Waits for the copy under way of `tracked`: the job stalls meanwhile.
  void await_copy(detail::tracked_tensor& tracked) {
    const auto waiting = clock::now();
    tracked.copy->synchronize();
    stats_.stall_s += std::chrono::duration<double>(clock::now() - waiting).count();
  }

  /// Moves the tensors out (or on their way) whose storage is still alive and for which
  /// `carry(t, tracked)` holds into `carried`, for the next iteration to bring back.
  template <class Carry>
  void carry_over(Carry&& carry) {
    for (auto it = s_.tensors.begin(); it != s_.tensors.end();) {
      if (carry(it->first, it->second) && storage_of(it->first)) {
        s_.carried.insert(std::move(*it));
        it = s_.tensors.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Waits for every copy under way: their buffers and blocks may go only after.
  void wait_for_copies() {
    for (auto& [t, tracked] : s_.tensors) {
      if (tracked.copy) tracked.copy->synchronize();
    }

    for (auto& [event, buffer] : s_.finishing) event->synchronize();
    s_.finishing.clear();
  }

  /// Brings tensor `t` back if it is out: waits for its copy (a stall) or rebuilds it. With
  /// `may_stay`, a tensor out for which no memory comes (the gate would fail the allocation:
  /// every job waits, and none can restart here) stays in host memory, which the device
  /// reaches too (pinned): its readers read it there, slower, rather than the job failing. A
  /// later reader brings it back, or, a parameter, the next iteration's first.
  void make_present(std::size_t t, bool may_stay = false) {
    auto& tracked = s_.tensors[t];
    switch (tracked.where) {
      case residence::present:
        return;
      case residence::going_out:
      case residence::out: {
        // Only a tensor whose copy out has finished can be read where it lies.
        std::optional<memory::fallback_scope> reads_from_host;
        if (may_stay && tracked.where == residence::out) reads_from_host.emplace();
        try {
          swap_in(t, true);
        } catch (const memory::out_of_memory_error&) {
          if (!reads_from_host) throw;
          ++stats_.host_reads;
          stats_.host_read_bytes += tracked.bytes;
          return;
        }
        if (tracked.where != residence::coming_in) return;
      }
        [[fallthrough]];
      case residence::coming_in:
        await_copy(tracked);
        complete_in(t);
        return;
      case residence::dropped:
        rebuild(t);
        return;
    }
  }

  void remember_call(std::size_t op, const at::RecordFunction& fn) {
    auto& call = s_.calls[op];
    call = {};
    call.reruns_left = s_.recomputes_from[op];
    if (const auto name = fn.operator_name()) {
      if (auto handle = c10::Dispatcher::singleton().findOp(*name)) call.op.emplace(*handle);
    }
    call.inputs.assign(fn.inputs().begin(), fn.inputs().end());
    for (const auto& input : call.inputs) {
      for_each_tensor(input, [&](const at::Tensor& tensor) {
        if (tensor.defined()) call.versions.emplace_back(tensor, tensor._version());
      });
    }
    if (s_.sequence.operations[op].random) call.generators = save_generators(call.inputs);
    call.first_allocation = s_.allocations;
  }

  /// Runs tensor `t`'s creating operation again and moves the blocks it makes into the
  /// storages of every tensor of that operation that is dropped.
  void rebuild(std::size_t t) {
    const auto creator = *s_.sequence.tensors[t].created_by;
    const auto found = s_.calls.find(creator);
    TANDEM_EXPECTS(found != s_.calls.end() && found->second.op, error,
                   "plan executor: cannot rebuild tensor '" + s_.sequence.tensors[t].name +
                       "': its operation '" + s_.sequence.operations[creator].name +
                       "' did not run as recorded this iteration");
    auto& call = found->second;
    for (const auto& [tensor, version] : call.versions) {
      meet(tensor);  // an input recomputed or swapped itself comes back first
      TANDEM_EXPECTS(tensor._version() == version, error,
                     "plan executor: cannot rebuild tensor '" + s_.sequence.tensors[t].name +
                         "': an input of '" + s_.sequence.operations[creator].name +
                         "' was changed in place since it ran; swap this tensor instead");
    }
    const auto began = clock::now();
    std::vector<generator_state> current;
    if (!call.generators.empty()) {
      current = save_generators(call.inputs);
      for (const auto& g : call.generators) restore_generator(g);
    }
    const auto restore_current = [&] {
      for (const auto& g : current) restore_generator(g);
    };
    torch::jit::Stack stack(call.inputs.begin(), call.inputs.end());
    s_.rerun_allocations.clear();
    s_.rerun_saved.clear();
    s_.replaying = true;
    try {
      c10::AutoGradMode saving(true);  // so that what the operation saves comes back too
      call.op->callBoxed(&stack);
    } catch (...) {
      s_.replaying = false;
      restore_current();
      throw;
    }
    s_.replaying = false;
    restore_current();

    std::vector<at::Tensor> made = std::move(s_.rerun_saved);
    for (const auto& value : stack)
      for_each_tensor(value, [&](const at::Tensor& x) { made.push_back(x); });
    for (auto& [other, tracked] : s_.tensors) {
      if (tracked.where != residence::dropped || s_.sequence.tensors[other].created_by != creator)
        continue;
      const auto ordinal = *s_.sequence.tensors[other].allocation;
      TANDEM_EXPECTS(ordinal >= call.first_allocation &&
                         ordinal - call.first_allocation < s_.rerun_allocations.size(),
                     error,
                     "plan executor: rerunning '" + s_.sequence.operations[creator].name +
                         "' did not make tensor '" + s_.sequence.tensors[other].name + "' again");
      const void* block = s_.rerun_allocations[ordinal - call.first_allocation];
      const auto storage = storage_of(other);
      if (!storage) {
        place(other, residence::present);
        continue;
      }
      bool moved = false;
      for (auto& x : made) {
        if (!x.defined() || !x.has_storage() || x.storage().data_ptr().get() != block) continue;
        auto* source = x.storage().unsafeGetStorageImpl();
        TANDEM_EXPECTS(source->nbytes() == tracked.bytes, error,
                       "plan executor: rerunning '" + s_.sequence.operations[creator].name +
                           "' made tensor '" + s_.sequence.tensors[other].name +
                           "' in another size");
        static_cast<void>(storage->set_data_ptr(source->set_data_ptr(c10::DataPtr())));
        moved = true;
        break;
      }
      TANDEM_EXPECTS(moved, error,
                     "plan executor: rerunning '" + s_.sequence.operations[creator].name +
                         "' did not hand back tensor '" + s_.sequence.tensors[other].name + "'");
      place(other, residence::present);
      ++stats_.recomputations;
      if (call.reruns_left > 0) --call.reruns_left;
    }
    {
      const own_moves own(s_.internal);
      made.clear();
      stack.clear();
    }
    stats_.recompute_s += std::chrono::duration<double>(clock::now() - began).count();
    if (call.reruns_left == 0) s_.calls.erase(found);
  }

 private:
  detail::executor_state& s_;
  execution_stats& stats_;
};

}  // namespace

plan_executor::plan_executor(memory::device_pool& pool, memory::job_id job,
                             device::copy_channel& channel, footprint::access_sequence sequence,
                             footprint::plan plan, memory::trace_sink* next,
                             persistent_storages persistent)
    : state_(std::make_unique<detail::executor_state>(
          pool, job, channel, std::move(sequence), std::move(plan), next, std::move(persistent))) {
  auto& s = *state_;
  footprint::validate(s.plan, s.sequence);
  const auto ops = s.sequence.operations.size();
  s.released_at_end.resize(ops);
  s.needed_at_start.resize(ops);
  s.swap_in_at.resize(ops);
  s.recomputes_from.assign(ops, 0);
  std::size_t allocations = 0;
  for (const auto& t : s.sequence.tensors) {
    if (t.allocation) allocations = std::max(allocations, *t.allocation + 1);
  }
  s.tensor_of_allocation.resize(allocations);
  s.wrapped.assign(s.sequence.tensors.size(), false);
  persistent_storages decided;  // the persistent tensors the plan moves
  for (std::size_t k = 0; k < s.plan.decisions.size(); ++k) {
    const auto& d = s.plan.decisions[k];
    const auto& t = s.sequence.tensors[d.tensor];
    const auto handle = s.persistent.find(d.tensor);
    TANDEM_EXPECTS(t.allocation.has_value() || (!t.created_by && handle != s.persistent.end()),
                   config_error,
                   "plan: decision " + std::to_string(k) + " (tensor '" + t.name +
                       "'): the executor cannot locate the tensor (the sequence says not which "
                       "allocation it is, nor was its storage recorded: it was not recorded "
                       "from a real iteration of this job); record the job's sequence with "
                       "`tandem profile` and plan from that");
    if (t.allocation) {
      s.tensor_of_allocation[*t.allocation] = d.tensor;
    } else {
      decided.emplace(*handle);
    }
    if (d.wraps) s.wrapped[d.tensor] = true;
    if (const auto release = s.sequence.access_op(d.tensor, d.released_after)) {
      s.released_at_end[*release].push_back(k);
    } else {
      s.released_at_begin.push_back(k);  // a persistent tensor's access 0: the start
    }
    s.needed_at_start[*s.sequence.access_op(d.tensor, d.needed_at)].push_back(k);
    if (d.what == footprint::action::swap) {
      s.swap_in_at[d.swap_in.op].push_back(k);
    } else {
      ++s.recomputes_from[*t.created_by];
    }
  }
  s.persistent = std::move(decided);
}

plan_executor::~plan_executor() {
  // An iteration cut short (the job failed): no copy may outlive the memory it reads or writes,
  // which goes back to the pool, where another job may have it next.
  executor_ops(*state_, stats_).wait_for_copies();
  // Copies out across the boundary still running: their storages keep their device blocks.
  for (auto& [t, tracked] : state_->carried) {
    if (tracked.copy) tracked.copy->synchronize();
  }
  if (executing == this) {
    executing = nullptr;
    state_->pool.clear_pressure_relief(state_->job, this);
  }
  if (state_->callbacks != 0) at::removeCallback(state_->callbacks);
}

const footprint::plan& plan_executor::plan() const {
  return state_->plan;
}

const std::vector<double>& plan_executor::measured_durations() const {
  return state_->measured_s;
}

void plan_executor::measure_durations(bool on) {
  TANDEM_EXPECTS(executing != this, usage_error,
                 "plan_executor::measure_durations during an iteration");
  state_->measuring = on;
}

void plan_executor::begin() {
  auto& s = *state_;
  TANDEM_EXPECTS(executing == nullptr, usage_error,
                 "a plan executor is already running an iteration on this thread");
  s.thread = std::this_thread::get_id();
  s.op = 0;
  s.depth = 0;
  s.allocations = 0;
  s.diverged = false;
  s.failure = nullptr;
  s.started.assign(s.sequence.operations.size(), clock::time_point{});
  s.computing.assign(s.sequence.operations.size(), clock::time_point{});
  s.computed_s.assign(s.sequence.operations.size(), -1.0);
  {
    std::lock_guard lock(s.mutex);
    s.live.clear();
  }
  s.by_storage.clear();
  s.clear_tensors();
  s.tensors = std::move(s.carried);
  s.carried.clear();
  for (const auto& [t, tracked] : s.tensors) {
    s.index(t, tracked.where);
    // Carried, perhaps from the executor of an earlier plan, which need not move it: its
    // readers find it by its storage.
    if (!tracked.storage) continue;
    if (const auto storage = tracked.storage->lock()) s.by_storage[storage.get()] = t;
  }
  // Persistent tensors are there from the start, where the last iteration left them.
  for (const auto& [t, handle] : s.persistent) {
    const auto storage = handle.lock();
    if (!storage) continue;
    s.tensors[t].storage.emplace(handle);
    s.by_storage[storage.get()] = t;
  }
  s.calls.clear();
  s.pending_out.clear();
  s.pending_in.clear();
  s.called_off.assign(s.plan.decisions.size(), false);
  executor_ops ops(s, stats_);
  if (std::exchange(s.fresh, false)) {
    // The cost model prices a plan in its steady state, where a stretch across the boundary
    // left at the end of the iteration before: in the first, such tensors leave as it begins
    // rather than holding their memory through it.
    for (const auto& d : s.plan.decisions) {
      if (d.wraps && d.what == footprint::action::swap && s.tensors.contains(d.tensor))
        ops.swap_out(d.tensor);
    }
  }
  for (const auto k : s.released_at_begin) ops.release(k);
  s.ending = false;
  s.reading.clear();
  s.unpacked.clear();
  s.bringing.reset();
  executing = this;
  // A plan that moves nothing, with nothing out from the last iteration, never reads an
  // operation's tensors nor a saved one: it only counts and times the operations, so libtorch
  // is spared the copies of every operation's inputs and outputs and the saved-tensor hooks.
  // Where no one wants those times either, it follows no operation at all: libtorch's
  // per-operation callbacks, even empty ones, cost a job of many small operations 2-3%.
  const bool moves = !s.plan.decisions.empty() || !s.away.empty();
  s.observed = moves || s.measuring;
  if (s.observed) s.callbacks = detail::add_operation_callbacks(&on_start, &on_end, moves);
  if (moves) s.saved_scope = std::make_unique<saved_tensor_scope>(*this);
  s.pool.set_pressure_relief(s.job, this);
}

void plan_executor::end() {
  auto& s = *state_;
  TANDEM_EXPECTS(executing == this, usage_error, "plan_executor::end without begin");
  s.ending = true;
  s.pool.clear_pressure_relief(s.job, this);
  s.saved_scope.reset();
  if (s.callbacks != 0) at::removeCallback(s.callbacks);
  s.callbacks = 0;
  executor_ops ops(s, stats_);
  // Whatever is still out and alive comes back, so that the next iteration (or whoever holds
  // it) finds it; every copy finishes before its buffers go.
  try {
    for (auto& [t, tracked] : s.tensors) {
      if (tracked.where == residence::dropped && !ops.storage_of(t)) continue;
      if (s.wrapped[t]) continue;  // out across the boundary: see below
      if (tracked.where != residence::present) ops.make_present(t, true);
    }
  } catch (...) {
    abandon_iteration();
    throw;
  }
  // Swaps across the boundary whose trigger has not come yet leave now; those out or going out
  // stay so into the next iteration, their copies running on.
  for (const auto& pending : s.pending_out) {
    const auto& d = s.plan.decisions[pending.decision];
    if (d.wraps) ops.swap_out(d.tensor);
  }
  s.pending_out.clear();
  // Out across the boundary as planned, or a parameter left in host memory for want of room:
  // the next iteration's readers bring them back.
  ops.carry_over([&](std::size_t t, const detail::tracked_tensor& tracked) {
    const bool out = tracked.where == residence::going_out || tracked.where == residence::out;
    return out && (s.wrapped[t] || !s.sequence.tensors[t].created_by);
  });
  // Copies out whose tensor was needed back before they finished served nothing, yet the
  // iteration ends only after them (a plan whose copies outrun the channel): a stall too.
  const auto waiting = std::chrono::steady_clock::now();
  ops.wait_for_copies();
  stats_.stall_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count();
  s.calls.clear();
  s.clear_tensors();
  s.by_storage.clear();
  // Sizes that stopped matching, or another number of allocations or operations (where they
  // were followed) than recorded: the plan did not describe this iteration.
  const bool diverged = s.diverged || s.allocations != s.tensor_of_allocation.size() ||
                        (s.observed && s.op != s.sequence.operations.size());
  if (diverged) ++stats_.diverged_iterations;
  s.measured_s.clear();
  if (!diverged && std::ranges::none_of(s.computed_s, [](double d) { return d < 0; })) {
    s.measured_s = s.computed_s;
  }
  ++stats_.iterations;
  executing = nullptr;
  rethrow_failure();
}

void plan_executor::abandon_iteration() noexcept {
  // No room to bring everything back (an iteration cut short while memory is short, its
  // restart owed): parameters and optimizer state still out stay on the host, their data
  // intact, carried into the next iteration, whose readers bring them back. The iteration's
  // own tensors belonged to the cut iteration: the next one makes its own (carried, they
  // would be taken for them).
  auto& s = *state_;
  executor_ops ops(s, stats_);
  ops.wait_for_copies();
  ops.carry_over([&](std::size_t t, const detail::tracked_tensor& tracked) {
    return tracked.where != residence::present && tracked.where != residence::dropped &&
           !s.sequence.tensors[t].created_by;
  });
  s.pending_out.clear();
  s.pending_in.clear();
  s.calls.clear();
  s.clear_tensors();
  s.by_storage.clear();
  s.measured_s.clear();
  ++stats_.iterations;
  ++stats_.diverged_iterations;
  executing = nullptr;
}

void plan_executor::bring_back(plan_executor* next) {
  auto& s = *state_;
  TANDEM_EXPECTS(executing != this, usage_error, "plan_executor::bring_back during an iteration");
  TANDEM_EXPECTS(next == nullptr || (next != this && next->state_->sequence.tensors.size() ==
                                                         s.sequence.tensors.size()),
                 usage_error, "plan_executor::bring_back to an executor of another sequence");
  s.tensors = std::move(s.carried);
  s.carried.clear();
  executor_ops ops(s, stats_);
  for (auto& [t, tracked] : s.tensors) {
    if (tracked.where != residence::present && ops.storage_of(t))
      ops.make_present(t, next != nullptr);
  }
  ops.wait_for_copies();
  if (next != nullptr) {
    ops.carry_over([](std::size_t, const detail::tracked_tensor& tracked) {
      return tracked.where == residence::out;
    });
    for (auto& entry : s.carried) next->state_->carried.insert(std::move(entry));
    s.carried.clear();
  }
  s.clear_tensors();
}

void plan_executor::on_event(const memory::trace_event& event) {
  auto& s = *state_;
  if (s.next != nullptr) s.next->on_event(event);
  if (event.job != s.job || executing != this || s.passive_moves > 0) return;
  const void* block = s.pool.base() + event.offset;
  if (event.op == memory::trace_op::alloc) {
    if (s.replaying) {
      s.rerun_allocations.push_back(block);
      return;
    }
    if (s.internal) return;
    const auto ordinal = s.allocations++;
    std::lock_guard lock(s.mutex);
    if (ordinal < s.tensor_of_allocation.size() && s.tensor_of_allocation[ordinal]) {
      const auto t = *s.tensor_of_allocation[ordinal];
      if (event.bytes != s.sequence.tensors[t].bytes) {
        s.diverged = true;
        return;
      }
      s.live[block] = t;
    } else {
      s.live.erase(block);
    }
  } else if (event.op == memory::trace_op::free) {
    std::lock_guard lock(s.mutex);
    s.live.erase(block);
  }
}

std::unique_ptr<torch::autograd::SavedVariableHooks> plan_executor::hooks_for_saved() {
  if (state_->replaying) return std::make_unique<capturing_hooks>(state_->rerun_saved);
  return std::make_unique<executor_hooks>();
}

void plan_executor::operation_started(const at::RecordFunction& fn) {
  auto& s = *state_;
  if (s.replaying || s.depth++ > 0) return;
  detail::outermost_began(s.callbacks);
  s.unpacked.clear();
  s.reading.clear();
  // Only a plan that moves tensors has any to make room with.
  if (!s.plan.decisions.empty()) {
    for (const auto& input : fn.inputs()) {
      for_each_tensor(input, [&](const at::Tensor& tensor) {
        if (tensor.defined() && tensor.has_storage())
          s.reading.push_back(tensor.storage().unsafeGetStorageImpl());
      });
    }
  }
  // Kept for the next saved-tensor hook or end(); the executor acts no more this iteration.
  if (!detail::keeping_failure(s.failure, [&] { start_operation(fn); })) s.diverged = true;
}

void plan_executor::start_operation(const at::RecordFunction& fn) {
  auto& s = *state_;
  const auto op = s.op++;
  executor_ops ops(s, stats_);
  if (op >= s.sequence.operations.size()) {
    s.diverged = true;
  } else {
    s.started[op] = clock::now();
    ops.finish_copies();
    for (const auto k : s.swap_in_at[op]) s.pending_in.push_back({k, s.plan.decisions[k].swap_in});
    ops.issue_due();
    if (s.recomputes_from[op] > 0) ops.remember_call(op, fn);
    for (const auto k : s.needed_at_start[op]) ops.settle(k);
  }
  // Whatever else it reads must be present too: never compute on missing data.
  if (ops.any_out()) {
    for (const auto& input : fn.inputs())
      for_each_tensor(input, [&](const at::Tensor& tensor) { ops.meet(tensor); });
  }
  if (op < s.computing.size()) s.computing[op] = clock::now();
}

void plan_executor::operation_ended(const at::RecordFunction& fn) {
  auto& s = *state_;
  if (s.replaying || s.depth == 0 || --s.depth > 0) return;
  detail::outermost_ended(s.callbacks);
  s.unpacked.clear();
  s.reading.clear();
  if (!detail::keeping_failure(s.failure, [&] { end_operation(fn); })) s.diverged = true;
}

void plan_executor::end_operation(const at::RecordFunction& fn) {
  auto& s = *state_;
  const auto op = s.op - 1;
  if (op < s.computing.size()) {
    s.computed_s[op] = std::chrono::duration<double>(clock::now() - s.computing[op]).count();
  }
  executor_ops ops(s, stats_);
  if (ops.any_to_meet()) {
    for (const auto& output : fn.outputs()) {
      for_each_tensor(output, [&](const at::Tensor& tensor) {
        if (tensor.defined() && tensor.has_storage())
          static_cast<void>(ops.tensor_of(tensor.storage().unsafeGetStorageImpl()));
      });
    }
  }
  if (op < s.sequence.operations.size()) {
    for (const auto k : s.released_at_end[op]) ops.release(k);
  }
  ops.finish_copies();
  ops.issue_due();
}

void plan_executor::rethrow_failure() {
  if (auto failure = std::exchange(state_->failure, nullptr)) std::rethrow_exception(failure);
}

void plan_executor::packed(const at::Tensor& tensor) {
  auto& s = *state_;
  rethrow_failure();
  if (s.replaying || !tensor.defined() || !tensor.has_storage()) return;
  executor_ops ops(s, stats_);
  static_cast<void>(ops.tensor_of(tensor.storage().unsafeGetStorageImpl()));
}

void plan_executor::moving() {
  ++state_->passive_moves;
}

void plan_executor::moved(const c10::StorageImpl* /*storage*/, std::optional<std::size_t> /*from*/,
                          std::optional<std::size_t> /*to*/, double /*seconds*/) {
  if (state_->passive_moves > 0) --state_->passive_moves;
}

bool plan_executor::claims(const c10::StorageImpl* storage) const {
  const auto& s = *state_;
  if (s.by_storage.contains(storage)) return true;
  std::lock_guard lock(s.mutex);
  return s.live.contains(storage->data_ptr().get());
}

void plan_executor::unpacking(const at::Tensor& tensor) {
  auto& s = *state_;
  rethrow_failure();
  executor_ops ops(s, stats_);
  ops.meet(tensor);
  if (s.depth == 0 || !tensor.defined() || !tensor.has_storage()) return;
  if (const auto found = s.by_storage.find(tensor.storage().unsafeGetStorageImpl());
      found != s.by_storage.end()) {
    s.unpacked.push_back(found->second);
  }
}

bool plan_executor::relieve(memory::job_id job, std::size_t /*bytes*/,
                            memory::relief_moment moment) {
  auto& s = *state_;
  // Its own moves are planned: out of turn only where the allocation would fail otherwise,
  // and only on the job's thread, in its iteration, whose operations under way are known.
  if (moment != memory::relief_moment::instead_of_failing || job != s.job || executing != this ||
      s.ending || s.replaying) {
    return false;
  }
  return executor_ops(s, stats_).evict_one();
}

}  // namespace tandem::torch_support
