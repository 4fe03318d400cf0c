#pragma once
// A job's local area: the regions it borrowed, carved into blocks by best fit with splitting and
// coalescing, with stream-aware free lists (Waterwave §4.2) and completion batches (Zico §6.1).
// Internal to tandem::memory; device_pool is the public face.
//
// Note [Free block states]
//   live      handed to the job.
//   unsynced  freed on stream S, but work enqueued on S before the free may still touch it.
//             Reusable at once by S (in-order), by another stream only after waiting for S.
//   synced    the completion event covering its free has completed: usable by any stream, and
//             a segment made only of one synced block may go back to the sharable area.
//   pending   freed, but used on extra streams (record_stream): waits for their events, then
//             becomes unsynced on its own stream.
// Coalescing joins synced with synced, and unsynced with unsynced of the same stream; an
// unsynced block is never merged into a synced one (that would make synced memory unsafe).
//
// Note [Completion batches]
//   Frees on a stream go into the stream's open batch. Once `event_granularity` bytes have been
//   freed into it (or a free empties a whole segment, or memory is needed), the batch is closed
//   by recording one event on the stream; when that event completes, every block of the batch
//   becomes synced. One event per N bytes instead of one per free keeps tracking cheap (Zico
//   Table 1); the price is that freed memory passes to other streams and jobs a little later.
//
// Note [Retired arenas]
//   A job that leaves while tensors of its own are still alive (held by an exception, a cache,
//   another thread) must not hand their memory to another job: the late free would then release
//   the new owner's block, and the late writer would corrupt it. Retiring waits for the job's
//   streams, returns the regions that hold nothing live, and keeps the others borrowed under the
//   job's id, so that their frees still find this arena. Such a free is complete at once (the
//   streams were drained and are gone); once the last live block is freed its regions go back
//   and the pool forgets the arena. A retired arena refuses every other operation.
//
// Thread safety: every public member locks the arena's mutex; the arena never holds it while
// taking another arena's lock. Lock order: arena mutex, then the region pool's mutex.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/device/stream.hpp"
#include "tandem/memory/alloc_kind.hpp"
#include "tandem/memory/borrow_gate.hpp"
#include "tandem/memory/detail/pool_context.hpp"
#include "tandem/memory/free_status.hpp"
#include "tandem/memory/pressure_relief.hpp"
#include "tandem/memory/stats.hpp"

namespace tandem::memory::detail {

/// Which regions a block may come from. Persistent state, small blocks, the ephemeral kinds
/// (temporaries and gradient maps) and feature maps (with unclassified data) each get regions of
/// their own (Zico §4, §6.3; Salus §3.3): a short-lived buffer freed mid-iteration then leaves no
/// hole between long-lived feature maps, and its region can go back as soon as it empties.
/// Small gradients get regions of their own once many have been live at once (small_gradient;
/// job_arena::small_gradients_apart_).
enum class region_class : std::uint8_t { persistent, small, large, transient, small_gradient };
inline constexpr std::size_t region_class_count = 5;

class job_arena {
 public:
  job_arena(job_id id, std::string name, pool_context& context);
  job_arena(const job_arena&) = delete;
  job_arena& operator=(const job_arena&) = delete;

  [[nodiscard]] job_id id() const { return id_; }
  [[nodiscard]] const std::string& name() const { return name_; }

  /// Returns nullptr when neither the job's free blocks nor the sharable area can supply
  /// `bytes` (already rounded). Blocks the host only as the last resort (stats: host_syncs).
  [[nodiscard]] void* try_allocate(device::stream& stream, std::size_t bytes, alloc_kind kind);
  /// The last resort before out of memory: the tightest free block in the job's regions of a
  /// class other than the request's (the block stays in its region's class). Classes keep
  /// lifetimes apart so that they do not fragment each other; taken any earlier, this costs
  /// more than it saves (a planned ResNet-20 under 40 MiB then fit batch 264, not 341).
  [[nodiscard]] void* try_allocate_in_other_class(device::stream& stream, std::size_t bytes,
                                                  alloc_kind kind);

  /// The block at `offset` must lie in a region this job owns.
  free_status deallocate(std::size_t offset);

  /// Marks the live block at `offset` as used by `stream` too; its free then waits for `stream`.
  [[nodiscard]] bool record_stream(std::size_t offset, device::stream& stream);

  /// Closes open batches, promotes blocks whose events completed and returns empty regions.
  /// Never blocks.
  void poll();
  /// Closes every open batch and waits for it, so that all freed memory becomes synced and every
  /// empty region goes back. Blocks the host. Returns whether there was anything to wait for.
  bool synchronize();
  /// Forgets `stream` after waiting for its frees; call before destroying a stream the job used.
  void detach_stream(const device::stream& stream);
  /// Waits for the job's streams, drops every block and returns every region. Returns the bytes
  /// that were still live (abandoned). Only for the pool's destruction: nothing can touch the
  /// memory afterwards.
  std::size_t release_all();
  /// The job leaves (Note [Retired arenas]). Waits for the job's streams, returns every region
  /// that holds no live block and forgets the streams; returns the bytes still live.
  std::size_t retire();
  /// Without the lock: the pool asks on every allocation (is the job still registered) and
  /// every free (did it drain a retired arena).
  [[nodiscard]] bool retired() const { return retired_.load(std::memory_order_acquire); }
  /// Retired, and every block it still held then has been freed since: nothing of it is left.
  [[nodiscard]] bool drained() const;

  /// Most bytes of regions the job may hold (a static partition); 0 for no limit of its own.
  void set_limit(std::size_t bytes);
  [[nodiscard]] std::size_t limit() const;

  /// Who frees some of the job's memory when an allocation finds none (nullptr: nobody).
  void set_relief(pressure_relief* relief) { relief_.store(relief, std::memory_order_release); }
  void clear_relief(pressure_relief* relief) {
    relief_.compare_exchange_strong(relief, nullptr, std::memory_order_acq_rel);
  }
  [[nodiscard]] pressure_relief* relief() const { return relief_.load(std::memory_order_acquire); }

  /// What the job's regions hold unused (free, unsynced or pending) when `bytes` of `kind` found
  /// no room in its class, and whether try_allocate_in_other_class could serve them now.
  [[nodiscard]] own_room room_for(std::size_t bytes, alloc_kind kind);

  void count_out_of_memory();
  void count_host_sync();
  [[nodiscard]] job_stats stats() const;

 private:
  static constexpr std::uint32_t npos = ~std::uint32_t{0};
  enum class block_state : std::uint8_t { live, unsynced, synced, pending };

  struct block {
    std::size_t offset = 0;  // from the pool base
    std::size_t size = 0;
    std::uint64_t batch = 0;    // unsynced: the completion batch of its free
    std::uint32_t prev = npos;  // address neighbours inside the segment
    std::uint32_t next = npos;
    std::uint32_t fifo_prev = npos;  // unsynced: neighbours in the stream's batch order
    std::uint32_t fifo_next = npos;
    std::uint32_t segment = 0;
    std::uint16_t slot = 0;  // live: allocation stream; unsynced: stream of the free
    block_state state = block_state::synced;
    alloc_kind kind = alloc_kind::unknown;
    region_class cls = region_class::large;
  };

  struct segment {
    region_span span;
    std::size_t live_blocks = 0;  // once 0, closing the open batch lets the regions go back
    bool in_use = false;
  };

  // Free blocks ordered for best fit: (size, offset), the block id alongside.
  struct free_key {
    std::size_t size;
    std::size_t offset;
    std::uint32_t id;
    bool operator<(const free_key& other) const {
      return size != other.size ? size < other.size : offset < other.offset;
    }
  };
  using free_index = std::set<free_key>;

  struct pending_event {
    device::event_ptr done;
    std::uint64_t batch;
  };

  struct stream_slot {
    device::stream* stream = nullptr;
    std::uint64_t open_batch = 1;         // frees since the last event go here
    std::size_t open_bytes = 0;           // bytes freed into the open batch
    std::uint64_t completed_batch = 0;    // every batch up to this one has completed
    std::deque<pending_event> in_flight;  // closed batches, oldest first
    std::uint32_t fifo_head = npos;       // unsynced blocks, oldest batch first
    std::uint32_t fifo_tail = npos;
    std::array<free_index, region_class_count> unsynced;
  };

  struct pending_free {
    std::uint32_t block;
    std::vector<device::event_ptr> uses;
  };

  // All private members require mutex_.
  void* search(device::stream& stream, std::size_t bytes, alloc_kind kind);
  [[nodiscard]] region_class class_of(std::size_t bytes, alloc_kind kind) const;
  [[nodiscard]] bool is_small_gradient(const block& b) const;
  std::uint16_t slot_of(device::stream& stream);
  std::uint32_t new_block();
  void index_insert(std::uint32_t id, std::uint32_t fifo_after);
  void index_erase(std::uint32_t id);
  std::uint32_t take_best_fit(free_index& index, std::size_t bytes);
  std::uint32_t take_from_other_streams(std::uint16_t slot, region_class cls, std::size_t bytes);
  /// The tightest synced free block for `bytes` in the job's regions of a class other than the
  /// request's (try_allocate_in_other_class, room_for); npos when none.
  std::uint32_t tightest_in_other_classes(std::size_t bytes, alloc_kind kind);
  std::uint32_t borrow_segment(region_class cls, std::size_t bytes);
  void* hand_out(std::uint32_t id, std::uint16_t slot, std::size_t bytes, alloc_kind kind);
  void free_on_slot(std::uint32_t id);
  void promote(std::uint32_t id);
  std::uint32_t merge(std::uint32_t left, std::uint32_t right);
  void release_if_empty(std::uint32_t id);
  void close_batch(stream_slot& slot);
  void poll_slot(stream_slot& slot);
  void poll_pending_frees();
  void poll_all();
  bool wait_all();
  /// The stream a slot stands for, 0 once the slot was detached or the arena retired.
  [[nodiscard]] std::uint32_t stream_id_of(std::uint16_t slot) const;
  /// Walks every structure (TANDEM_EXPENSIVE_CHECKS builds only): blocks tile the held regions.
  void check_invariants() const;
  void trace(trace_op op, std::uint32_t stream, alloc_kind kind, std::size_t bytes,
             std::size_t offset) const;

  const job_id id_;
  const std::string name_;
  pool_context& context_;

  mutable std::mutex mutex_;
  std::vector<block> blocks_;                // by block id
  std::vector<std::uint32_t> spare_blocks_;  // ids of unused entries of blocks_
  std::vector<segment> segments_;            // by segment id
  std::vector<std::uint32_t> spare_segments_;
  std::deque<stream_slot> slots_;                // deque: slots never move
  std::vector<std::int32_t> slot_by_stream_id_;  // device stream id -> slot, -1 if none
  std::array<free_index, region_class_count> synced_;
  std::unordered_map<std::size_t, std::uint32_t> live_;  // offset -> block id
  std::unordered_map<std::uint32_t, std::vector<device::stream*>> extra_uses_;
  std::vector<pending_free> pending_frees_;
  job_stats stats_;
  // Small gradients, live now. Once more than a region's worth of them, and more than
  // small_gradients_apart_count, have been live at once, they go to small_gradient regions from
  // then on: made and freed through the backward pass, they left holes between longer-lived
  // small blocks in every small region (MobileNetV2: 29 MiB of small regions held 9 MiB live;
  // 147 small gradients live at once). Fewer of them fit in the small regions' holes, where a
  // class of their own costs a partly filled region: ResNet-20 under 40 MiB, at the edge of its
  // largest batch, lost a fifth of it; the LSTM (41 at once, 77 KiB on average) lost 8%. The
  // count lies between the LSTM's 41 and MobileNetV2's 147, not derived: a heuristic, as the
  // classes are.
  static constexpr std::size_t small_gradients_apart_count = 48;
  std::size_t small_gradient_live_bytes_ = 0;
  std::size_t small_gradients_live_ = 0;
  bool small_gradients_apart_ = false;
  std::size_t limit_ = 0;  // 0: only the pool's budget applies
  // See Note [Retired arenas]. Set once, under mutex_; read without it by retired().
  std::atomic<bool> retired_{false};
  std::atomic<pressure_relief*> relief_{nullptr};
};

}  // namespace tandem::memory::detail
