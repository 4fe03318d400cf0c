#include "tandem/torch/passive_swapper.hpp"

#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "for_each_tensor.hpp"
#include "operation_callbacks.hpp"
#include "tandem/common/error.hpp"

namespace tandem::torch_support {

namespace {

using clock = std::chrono::steady_clock;

thread_local passive_swapper* swapping = nullptr;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (swapping != nullptr) swapping->operation_started(fn);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* /*context*/) {
  if (swapping != nullptr) swapping->operation_ended(fn);
}

double seconds_since(clock::time_point began) {
  return std::chrono::duration<double>(clock::now() - began).count();
}

}  // namespace

namespace detail {

/// A storage's copy on the host while it is out. The DataPtr that points at it owns a share
/// and marks it freed when the storage dies, from whatever thread that happens on; the job's
/// thread reports it at its next operation (Note [Frees while out]).
struct host_copy {
  std::shared_ptr<device::host_buffer> buffer;
  std::atomic<bool> freed{false};
};

struct tracked_storage {
  std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>> storage;  ///< always set
  std::uint64_t last_use = 0;
  std::shared_ptr<host_copy> out;  ///< set while the storage is out of the pool
  std::size_t bytes = 0;
};

struct passive_state {
  memory::device_pool& pool;
  memory::job_id job;
  device::copy_channel& channel;
  relocation_observer* observer = nullptr;
  const storage_claims* claimed = nullptr;
  /// The job's relief when this swapper began (a plan executor's last resort), asked where
  /// this one has nothing left to move and the allocation would fail.
  memory::pressure_relief* next = nullptr;
  bool as_fallback = false;  ///< only where no wait would bring memory (relieve)
  std::thread::id thread;
  at::CallbackHandle callbacks = 0;
  bool active = false;
  bool ending = false;  ///< end() brings storages back: none may leave again
  /// Thrown in a RecordFunction callback, which libtorch would swallow: kept for end().
  std::exception_ptr failure;
  std::uint64_t tick = 0;
  std::size_t out_count = 0;
  std::unordered_map<const c10::StorageImpl*, tracked_storage> tracked;
  /// Storages read by the operations under way, by nesting depth; counted in `pinned`.
  std::vector<std::vector<const c10::StorageImpl*>> reading;
  std::unordered_map<const c10::StorageImpl*, int> pinned;

  passive_state(memory::device_pool& p, memory::job_id j, device::copy_channel& c)
      : pool(p), job(j), channel(c) {}
};

}  // namespace detail

namespace {

// Note [Frees while out]: a storage out of the pool has no block, so the pool's trace never
// sees it freed; its host DataPtr's deleter marks the copy instead, and the swapper reports the
// free to the observer at the job's next operation boundary. Reporting from the deleter itself
// could reenter the swapper in the middle of a move (dropping a storage reference can free it).
c10::DataPtr host_data(const std::shared_ptr<detail::host_copy>& copy, c10::Device device) {
  auto* owner = new std::shared_ptr<detail::host_copy>(copy);
  return {copy->buffer->data(), owner,
          [](void* context) {
            auto* share = static_cast<std::shared_ptr<detail::host_copy>*>(context);
            (*share)->freed.store(true, std::memory_order_release);
            delete share;
          },
          device};
}

class swapper_ops {
 public:
  swapper_ops(detail::passive_state& s, passive_stats& stats) : s_(s), stats_(stats) {}

  /// The tracked entry of `storage`, registered when it lies in the job's pool memory.
  detail::tracked_storage* track(const c10::StorageImpl* storage, bool register_new) {
    if (const auto found = s_.tracked.find(storage); found != s_.tracked.end())
      return &found->second;
    if (!register_new) return nullptr;
    const void* data = storage->data_ptr().get();
    if (data == nullptr || storage->allocator() == nullptr || !s_.pool.owns(data) ||
        s_.pool.owner_of(data) != s_.job)
      return nullptr;
    auto& entry = s_.tracked[storage];
    entry.storage.emplace(
        c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(const_cast<c10::StorageImpl*>(storage)));
    return &entry;
  }

  /// Reports the storages freed while out (Note [Frees while out]) and forgets them.
  void sweep() {
    if (s_.out_count == 0) return;
    for (auto it = s_.tracked.begin(); it != s_.tracked.end();) {
      const auto& out = it->second.out;
      if (out && out->freed.load(std::memory_order_acquire)) {
        if (s_.observer != nullptr) s_.observer->freed_while_out(it->first);
        --s_.out_count;
        it = s_.tracked.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Swaps the least recently used storage that no operation under way reads out of the pool;
  /// false when there is none.
  bool evict_one() {
    detail::tracked_storage* victim = nullptr;
    c10::intrusive_ptr<c10::StorageImpl> storage;
    for (auto& [key, entry] : s_.tracked) {
      if (entry.out || s_.pinned.contains(key)) continue;
      if (victim != nullptr && entry.last_use >= victim->last_use) continue;
      if (s_.claimed != nullptr && s_.claimed->claims(key)) continue;
      auto alive = entry.storage->lock();
      if (!alive || alive->nbytes() == 0 || !s_.pool.owns(alive->data_ptr().get())) continue;
      victim = &entry;
      storage = std::move(alive);
    }
    if (victim == nullptr) return false;
    const auto began = clock::now();
    const void* data = storage->data_ptr().get();
    const auto offset =
        static_cast<std::size_t>(static_cast<const std::byte*>(data) - s_.pool.base());
    const std::size_t bytes = storage->nbytes();
    auto copy = std::make_shared<detail::host_copy>();
    copy->buffer = std::shared_ptr<device::host_buffer>(s_.channel.host_memory(bytes));
    s_.channel.copy(copy->buffer->data(), data, bytes)->synchronize();
    if (s_.observer != nullptr) s_.observer->moving();
    // The old DataPtr dies here: its block goes back to the pool.
    static_cast<void>(storage->set_data_ptr(host_data(copy, storage->device())));
    const double seconds = seconds_since(began);
    if (s_.observer != nullptr) s_.observer->moved(storage.get(), offset, std::nullopt, seconds);
    victim->out = std::move(copy);
    victim->bytes = bytes;
    ++s_.out_count;
    ++stats_.evictions;
    stats_.swapped_out_bytes += bytes;
    stats_.moving_s += seconds;
    return true;
  }

  /// Brings `entry`'s storage back into the pool if it is out and alive.
  void make_present(detail::tracked_storage& entry) {
    if (!entry.out) return;
    auto storage = entry.storage->lock();
    if (!storage) return;  // freed: the sweep reports it
    const auto began = clock::now();
    if (s_.observer != nullptr) s_.observer->moving();
    c10::DataPtr block;
    try {
      // Through the storage's own allocator, on the job's thread: the pool may ask this swapper
      // to make room, which never picks a storage that is out.
      block = storage->allocator()->allocate(entry.bytes);
    } catch (...) {
      if (s_.observer != nullptr)
        s_.observer->moved(storage.get(), std::nullopt, std::nullopt, seconds_since(began));
      throw;
    }
    s_.channel.copy(block.get(), entry.out->buffer->data(), entry.bytes)->synchronize();
    const auto offset =
        static_cast<std::size_t>(static_cast<const std::byte*>(block.get()) - s_.pool.base());
    entry.out.reset();  // the host DataPtr dying below marks an orphan: not a free
    --s_.out_count;
    static_cast<void>(storage->set_data_ptr(std::move(block)));
    const double seconds = seconds_since(began);
    if (s_.observer != nullptr) s_.observer->moved(storage.get(), std::nullopt, offset, seconds);
    stats_.swapped_in_bytes += entry.bytes;
    stats_.moving_s += seconds;
  }

 private:
  detail::passive_state& s_;
  passive_stats& stats_;
};

}  // namespace

passive_swapper::passive_swapper(memory::device_pool& pool, memory::job_id job,
                                 device::copy_channel& channel)
    : state_(std::make_unique<detail::passive_state>(pool, job, channel)) {}

passive_swapper::~passive_swapper() {
  stop();
  // What is still out stays on the host with its data; nobody reports its free any more.
  state_->tracked.clear();
}

bool passive_swapper::active() const {
  return state_->active;
}

void passive_swapper::begin(relocation_observer* observer, const storage_claims* claimed,
                            bool as_fallback) {
  auto& s = *state_;
  TANDEM_EXPECTS(!s.active, usage_error, "passive_swapper::begin called twice without end");
  TANDEM_EXPECTS(swapping == nullptr, usage_error,
                 "another passive swapper is running on this thread");
  s.observer = observer;
  s.claimed = claimed;
  s.as_fallback = as_fallback;
  s.thread = std::this_thread::get_id();
  s.tick = 0;
  s.active = true;
  swapping = this;
  s.callbacks = detail::add_operation_callbacks(&on_start, &on_end);
  s.next = s.pool.pressure_relief_of(s.job);
  s.pool.set_pressure_relief(s.job, this);
}

void passive_swapper::end() {
  auto& s = *state_;
  TANDEM_EXPECTS(s.active, usage_error, "passive_swapper::end without begin");
  if (auto failure = std::exchange(s.failure, nullptr)) {
    stop();
    std::rethrow_exception(failure);
  }
  swapper_ops ops(s, stats_);
  ops.sweep();
  // Whatever is still out and alive comes back for the next iteration (or whoever holds it),
  // all of it at once: what the job keeps between iterations must fit its budget anyway.
  s.ending = true;
  try {
    for (auto& [key, entry] : s.tracked) ops.make_present(entry);
  } catch (...) {
    stop();
    throw;
  }
  ops.sweep();
  stop();
}

void passive_swapper::stop() {
  auto& s = *state_;
  if (!s.active) return;
  s.pool.clear_pressure_relief(s.job, this);
  s.next = nullptr;
  if (s.callbacks != 0) at::removeCallback(s.callbacks);
  s.callbacks = 0;
  if (swapping == this) swapping = nullptr;
  s.active = false;
  s.ending = false;
  s.failure = nullptr;
  s.observer = nullptr;
  s.claimed = nullptr;
  // Only what is still out stays tracked (end() could not bring it back): it stays on the host,
  // its data intact, until the next iteration of this swapper reads it.
  std::erase_if(s.tracked, [](const auto& entry) { return !entry.second.out; });
  s.reading.clear();
  s.pinned.clear();
}

bool passive_swapper::relieve(memory::job_id job, std::size_t bytes, memory::relief_moment moment) {
  auto& s = *state_;
  // Only on the job's own thread, whose operations under way are known (a worker thread of an
  // operator may allocate too: its caller's inputs could not be told apart).
  if (!s.active || s.ending || job != s.job || std::this_thread::get_id() != s.thread) return false;
  // Beside a plan, the fallback comes last: the executor first finishes its copies out under
  // way or moves out of turn a tensor it will bring back before its next read. Asked first,
  // the swapper took small tensors no plan knew of (36-186 KiB an iteration on ResNet-20 at
  // batch 257-384 under 40 MiB), and the plan counted as not fitting.
  // As a fallback, the same: where another job's memory will come back, waiting for it costs
  // less than copies at PCIe speed.
  if (s.next != nullptr || s.as_fallback) {
    if (moment != memory::relief_moment::instead_of_failing) return false;
    if (s.next != nullptr && s.next->relieve(job, bytes, moment)) return true;
  }
  return swapper_ops(s, stats_).evict_one();
}

void passive_swapper::operation_started(const at::RecordFunction& fn) {
  auto& s = *state_;
  // An input that could not come back (no room) fails the iteration at end(); nothing more is
  // swapped out meanwhile.
  if (!detail::keeping_failure(s.failure, [&] { start_operation(fn); })) s.ending = true;
}

void passive_swapper::start_operation(const at::RecordFunction& fn) {
  auto& s = *state_;
  swapper_ops ops(s, stats_);
  if (s.reading.empty()) ops.sweep();
  ++s.tick;
  const bool outermost = s.reading.empty();
  auto& reads = s.reading.emplace_back();
  for (const auto& input : fn.inputs()) {
    detail::for_each_tensor(input, [&](const at::Tensor& tensor) {
      if (!tensor.defined() || !tensor.has_storage()) return;
      const auto* storage = tensor.storage().unsafeGetStorageImpl();
      reads.push_back(storage);
      ++s.pinned[storage];
    });
  }
  // Pinned first, then brought in: bringing one in may make room by swapping others out.
  // Only an outermost operation's inputs join the candidates: what a nested one reads may be
  // its caller's scratch, whose address the caller still holds.
  for (const auto* storage : reads) {
    if (auto* entry = ops.track(storage, outermost)) {
      ops.make_present(*entry);
      entry->last_use = s.tick;
    }
  }
}

void passive_swapper::operation_ended(const at::RecordFunction& fn) {
  auto& s = *state_;
  if (s.reading.empty()) return;  // began before this swapper did
  for (const auto* storage : s.reading.back()) {
    const auto found = s.pinned.find(storage);
    if (found != s.pinned.end() && --found->second == 0) s.pinned.erase(found);
  }
  s.reading.pop_back();
  if (!s.reading.empty()) return;
  // What an outermost operation made is a candidate from now on.
  swapper_ops ops(s, stats_);
  for (const auto& output : fn.outputs()) {
    detail::for_each_tensor(output, [&](const at::Tensor& tensor) {
      if (!tensor.defined() || !tensor.has_storage()) return;
      if (auto* entry = ops.track(tensor.storage().unsafeGetStorageImpl(), true))
        entry->last_use = s.tick;
    });
  }
  ops.sweep();
}

}  // namespace tandem::torch_support
