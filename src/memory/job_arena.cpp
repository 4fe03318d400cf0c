#include "tandem/memory/detail/job_arena.hpp"

#include <algorithm>
#include <cstdio>

#include "tandem/common/error.hpp"

namespace tandem::memory::detail {

job_arena::job_arena(job_id id, std::string name, pool_context& context)
    : id_(id), name_(std::move(name)), context_(context) {}

region_class job_arena::class_of(std::size_t bytes, alloc_kind kind) const {
  if (kind == alloc_kind::persistent) return region_class::persistent;
  if (bytes < context_.options.small_block_limit()) {
    const bool apart = small_gradients_apart_ && kind == alloc_kind::gradient;
    return apart ? region_class::small_gradient : region_class::small;
  }
  const bool ephemeral = kind == alloc_kind::temporary || kind == alloc_kind::gradient;
  return ephemeral ? region_class::transient : region_class::large;
}

bool job_arena::is_small_gradient(const block& b) const {
  return b.kind == alloc_kind::gradient && b.size < context_.options.small_block_limit();
}

std::uint16_t job_arena::slot_of(device::stream& stream) {
  const std::size_t stream_id = stream.id();
  if (stream_id >= slot_by_stream_id_.size()) slot_by_stream_id_.resize(stream_id + 1, -1);
  if (slot_by_stream_id_[stream_id] >= 0) {
    return static_cast<std::uint16_t>(slot_by_stream_id_[stream_id]);
  }
  // Reuse a detached slot (drained by detach_stream) before growing.
  std::size_t index = 0;
  while (index < slots_.size() && slots_[index].stream != nullptr) ++index;
  if (index == slots_.size()) {
    TANDEM_EXPECTS(slots_.size() < 0xffff, usage_error,
                   "job '" + name_ + "' uses too many streams; detach the ones it no longer uses");
    slots_.emplace_back();
  }
  slots_[index].stream = &stream;
  slot_by_stream_id_[stream_id] = static_cast<std::int32_t>(index);
  return static_cast<std::uint16_t>(index);
}

std::uint32_t job_arena::new_block() {
  if (!spare_blocks_.empty()) {
    const auto id = spare_blocks_.back();
    spare_blocks_.pop_back();
    blocks_[id] = block{};
    return id;
  }
  blocks_.emplace_back();
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

void job_arena::index_insert(std::uint32_t id, std::uint32_t fifo_before) {
  block& b = blocks_[id];
  const auto cls = static_cast<std::size_t>(b.cls);
  if (b.state == block_state::synced) {
    synced_[cls].insert({b.size, b.offset, id});
    return;
  }
  TANDEM_ASSERT(b.state == block_state::unsynced, "indexing a block that is not free");
  stream_slot& slot = slots_[b.slot];
  slot.unsynced[cls].insert({b.size, b.offset, id});
  // The FIFO stays in batch order: insert before `fifo_before`, or at the tail.
  b.fifo_next = fifo_before;
  b.fifo_prev = fifo_before == npos ? slot.fifo_tail : blocks_[fifo_before].fifo_prev;
  if (b.fifo_prev == npos) {
    slot.fifo_head = id;
  } else {
    blocks_[b.fifo_prev].fifo_next = id;
  }
  if (fifo_before == npos) {
    slot.fifo_tail = id;
  } else {
    blocks_[fifo_before].fifo_prev = id;
  }
}

void job_arena::index_erase(std::uint32_t id) {
  block& b = blocks_[id];
  const auto cls = static_cast<std::size_t>(b.cls);
  if (b.state == block_state::synced) {
    synced_[cls].erase({b.size, b.offset, id});
    return;
  }
  TANDEM_ASSERT(b.state == block_state::unsynced, "unindexing a block that is not free");
  stream_slot& slot = slots_[b.slot];
  slot.unsynced[cls].erase({b.size, b.offset, id});
  if (b.fifo_prev == npos) {
    slot.fifo_head = b.fifo_next;
  } else {
    blocks_[b.fifo_prev].fifo_next = b.fifo_next;
  }
  if (b.fifo_next == npos) {
    slot.fifo_tail = b.fifo_prev;
  } else {
    blocks_[b.fifo_next].fifo_prev = b.fifo_prev;
  }
  b.fifo_prev = b.fifo_next = npos;
}

std::uint32_t job_arena::take_best_fit(free_index& index, std::size_t bytes) {
  auto fit = index.lower_bound({bytes, 0, 0});
  return fit == index.end() ? npos : fit->id;
}

std::uint32_t job_arena::borrow_segment(region_class cls, std::size_t bytes) {
  const std::size_t region_size = context_.options.region_size;
  const std::size_t count = (bytes + region_size - 1) / region_size;
  if (limit_ != 0 && stats_.reserved_bytes + count * region_size > limit_) return npos;
  auto* gate = context_.gate.load(std::memory_order_acquire);
  if (gate != nullptr && !gate->try_reserve(id_, count * region_size)) return npos;
  const auto span = context_.region_supply.borrow(id_, count);
  if (!span) {
    if (gate != nullptr) gate->cancel(id_, count * region_size);
    return npos;
  }
  std::uint32_t seg = 0;
  if (!spare_segments_.empty()) {
    seg = spare_segments_.back();
    spare_segments_.pop_back();
  } else {
    segments_.emplace_back();
    seg = static_cast<std::uint32_t>(segments_.size() - 1);
  }
  segments_[seg] = segment{.span = *span, .live_blocks = 0, .in_use = true};
  const auto id = new_block();
  block& b = blocks_[id];
  b.offset = span->first * region_size;
  b.size = count * region_size;
  b.state = block_state::synced;
  b.segment = seg;
  b.cls = cls;
  index_insert(id, npos);
  stats_.reserved_bytes += b.size;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  stats_.regions_borrowed += count;
  trace(trace_op::region_borrow, 0, alloc_kind::unknown, b.size, b.offset);
  return id;
}

std::uint32_t job_arena::take_from_other_streams(std::uint16_t slot, region_class cls,
                                                 std::size_t bytes) {
  std::uint32_t best = npos;
  for (std::size_t other = 0; other < slots_.size(); ++other) {
    if (other == slot) continue;
    const auto candidate =
        take_best_fit(slots_[other].unsynced[static_cast<std::size_t>(cls)], bytes);
    if (candidate != npos && (best == npos || blocks_[candidate].size < blocks_[best].size)) {
      best = candidate;
    }
  }
  if (best == npos) return npos;
  stream_slot& owner = slots_[blocks_[best].slot];
  const std::uint64_t batch = blocks_[best].batch;
  if (batch == owner.open_batch) close_batch(owner);
  for (const auto& closed : owner.in_flight) {
    if (closed.batch >= batch) {
      // Later work on the taking stream is ordered after the owner's frees (Waterwave §4.2).
      slots_[slot].stream->wait(closed.done);
      ++stats_.cross_stream_waits;
      break;
    }
  }
  return best;
}

void* job_arena::hand_out(std::uint32_t id, std::uint16_t slot, std::size_t bytes,
                          alloc_kind kind) {
  const std::uint32_t fifo_next = blocks_[id].fifo_next;
  index_erase(id);
  if (blocks_[id].size > bytes) {
    // The remainder keeps the block's state, stream and batch, and its place in the FIFO.
    const auto rest = new_block();
    block& b = blocks_[id];
    block& r = blocks_[rest];
    r.offset = b.offset + bytes;
    r.size = b.size - bytes;
    r.state = b.state;
    r.slot = b.slot;
    r.batch = b.batch;
    r.segment = b.segment;
    r.cls = b.cls;
    r.prev = id;
    r.next = b.next;
    if (b.next != npos) blocks_[b.next].prev = rest;
    b.next = rest;
    b.size = bytes;
    index_insert(rest, fifo_next);
  }
  block& b = blocks_[id];
  b.state = block_state::live;
  b.slot = slot;
  b.kind = kind;
  live_.emplace(b.offset, id);
  ++segments_[b.segment].live_blocks;

  if (is_small_gradient(b)) {
    small_gradient_live_bytes_ += b.size;
    ++small_gradients_live_;
    if (small_gradient_live_bytes_ > context_.options.region_size &&
        small_gradients_live_ > small_gradients_apart_count) {
      small_gradients_apart_ = true;
    }
  }
  auto& per_kind = stats_.by_kind[index_of(kind)];
  per_kind.live_bytes += b.size;
  per_kind.peak_live_bytes = std::max(per_kind.peak_live_bytes, per_kind.live_bytes);
  ++per_kind.allocations;
  ++stats_.allocations;
  stats_.live_bytes += b.size;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  context_.add_live(b.size);
  trace(trace_op::alloc, stream_id_of(slot), kind, b.size, b.offset);
  return context_.base + b.offset;
}

void* job_arena::try_allocate(device::stream& stream, std::size_t bytes, alloc_kind kind) {
  std::lock_guard lock(mutex_);
  void* ptr = search(stream, bytes, kind);
  check_invariants();
  return ptr;
}

void* job_arena::search(device::stream& stream, std::size_t bytes, alloc_kind kind) {
  const auto slot = slot_of(stream);
  const auto cls = class_of(bytes, kind);
  auto& synced = synced_[static_cast<std::size_t>(cls)];

  // Waterwave's prioritized search: the stream's own unsynced blocks (in-order, so safe), then
  // blocks known complete, then fresh regions, then other streams' blocks behind a wait.
  if (auto id = take_best_fit(slots_[slot].unsynced[static_cast<std::size_t>(cls)], bytes);
      id != npos) {
    ++stats_.same_stream_reuses;
    return hand_out(id, slot, bytes, kind);
  }
  if (auto id = take_best_fit(synced, bytes); id != npos) {
    ++stats_.synced_reuses;
    return hand_out(id, slot, bytes, kind);
  }
  poll_all();
  if (auto id = take_best_fit(synced, bytes); id != npos) {
    ++stats_.synced_reuses;
    return hand_out(id, slot, bytes, kind);
  }
  if (auto id = borrow_segment(cls, bytes); id != npos) return hand_out(id, slot, bytes, kind);
  if (auto id = take_from_other_streams(slot, cls, bytes); id != npos) {
    return hand_out(id, slot, bytes, kind);
  }
  // Last resort: wait for the device so that every freed block becomes synced and empty regions
  // go back to the sharable area (SyncAndCoalesce).
  if (wait_all()) ++stats_.host_syncs;
  if (auto id = take_best_fit(synced, bytes); id != npos) {
    ++stats_.synced_reuses;
    return hand_out(id, slot, bytes, kind);
  }
  if (auto id = borrow_segment(cls, bytes); id != npos) return hand_out(id, slot, bytes, kind);
  return nullptr;
}

void* job_arena::try_allocate_in_other_class(device::stream& stream, std::size_t bytes,
                                             alloc_kind kind) {
  std::lock_guard lock(mutex_);
  const auto slot = slot_of(stream);
  if (wait_all()) ++stats_.host_syncs;
  const auto best = tightest_in_other_classes(bytes, kind);
  void* ptr = nullptr;
  if (best != npos) {
    ++stats_.synced_reuses;
    ++stats_.other_class_reuses;
    ptr = hand_out(best, slot, bytes, kind);
  }
  check_invariants();
  return ptr;
}

std::uint32_t job_arena::tightest_in_other_classes(std::size_t bytes, alloc_kind kind) {
  const auto cls = static_cast<std::size_t>(class_of(bytes, kind));
  std::uint32_t best = npos;
  for (std::size_t other = 0; other < region_class_count; ++other) {
    if (other == cls) continue;
    const auto id = take_best_fit(synced_[other], bytes);
    if (id != npos && (best == npos || blocks_[id].size < blocks_[best].size)) best = id;
  }
  return best;
}

std::uint32_t job_arena::merge(std::uint32_t left, std::uint32_t right) {
  block& l = blocks_[left];
  const block& r = blocks_[right];
  TANDEM_ASSERT(l.next == right && r.prev == left, "merging blocks that are not neighbours");
  l.size += r.size;
  l.next = r.next;
  if (r.next != npos) blocks_[r.next].prev = left;
  spare_blocks_.push_back(right);
  return left;
}

void job_arena::free_on_slot(std::uint32_t id) {
  const std::uint16_t slot_index = blocks_[id].slot;
  stream_slot& slot = slots_[slot_index];
  blocks_[id].state = block_state::unsynced;
#if defined(TANDEM_TEST_SKIP_EVENT_WAIT)
  // Deliberately broken build for the race-detector test: freed memory counts as complete at
  // once, as if the allocator forgot to wait for the device.
  blocks_[id].batch = 0;
  index_insert(id, slot.fifo_head);
  promote(id);
#else
  blocks_[id].batch = slot.open_batch;
  slot.open_bytes += blocks_[id].size;
  const auto same_stream_unsynced = [&](std::uint32_t other) {
    return other != npos && blocks_[other].state == block_state::unsynced &&
           blocks_[other].slot == slot_index;
  };
  std::uint32_t merged = id;
  if (const auto prev = blocks_[merged].prev; same_stream_unsynced(prev)) {
    index_erase(prev);
    merged = merge(prev, merged);
  }
  if (const auto next = blocks_[merged].next; same_stream_unsynced(next)) {
    index_erase(next);
    merged = merge(merged, next);
  }
  blocks_[merged].batch = slot.open_batch;  // the newest batch: the FIFO tail keeps its order
  index_insert(merged, npos);
  const bool segment_empty = segments_[blocks_[merged].segment].live_blocks == 0;
  if (segment_empty || slot.open_bytes >= context_.options.event_granularity) {
    // An empty segment is memory another job may want: close the batch now so that polling can
    // hand the regions back as soon as the device is done with them.
    close_batch(slot);
    poll_slot(slot);
  }
#endif
}

void job_arena::promote(std::uint32_t id) {
  index_erase(id);
  blocks_[id].state = block_state::synced;
  std::uint32_t merged = id;
  const auto synced = [&](std::uint32_t other) {
    return other != npos && blocks_[other].state == block_state::synced;
  };
  if (const auto prev = blocks_[merged].prev; synced(prev)) {
    index_erase(prev);
    merged = merge(prev, merged);
  }
  if (const auto next = blocks_[merged].next; synced(next)) {
    index_erase(next);
    merged = merge(merged, next);
  }
  index_insert(merged, npos);
  release_if_empty(merged);
}

void job_arena::release_if_empty(std::uint32_t id) {
  block& b = blocks_[id];
  if (b.state != block_state::synced || b.prev != npos || b.next != npos) return;
  index_erase(id);
  segment& seg = segments_[b.segment];
  // Traced before the regions become borrowable, so that a sink never sees another job's
  // borrow of them first: the sum of a timeline's reserved bytes then never exceeds the budget.
  trace(trace_op::region_return, 0, alloc_kind::unknown, b.size, b.offset);
  context_.region_supply.give_back(seg.span);
  if (auto* gate = context_.gate.load(std::memory_order_acquire)) gate->returned(id_, b.size);
  stats_.reserved_bytes -= b.size;
  stats_.regions_returned += seg.span.count;
  seg.in_use = false;
  spare_segments_.push_back(b.segment);
  spare_blocks_.push_back(id);
}

void job_arena::close_batch(stream_slot& slot) {
  if (slot.open_bytes == 0) return;
  slot.in_flight.push_back({slot.stream->record(), slot.open_batch});
  ++slot.open_batch;
  slot.open_bytes = 0;
  ++stats_.events_recorded;
}

void job_arena::poll_slot(stream_slot& slot) {
  while (!slot.in_flight.empty() && slot.in_flight.front().done->query()) {
    slot.completed_batch = slot.in_flight.front().batch;
    slot.in_flight.pop_front();
  }
  while (slot.fifo_head != npos && blocks_[slot.fifo_head].batch <= slot.completed_batch) {
    promote(slot.fifo_head);
  }
}

void job_arena::poll_pending_frees() {
  auto done = [](const pending_free& entry) {
    return std::all_of(entry.uses.begin(), entry.uses.end(),
                       [](const device::event_ptr& use) { return use->query(); });
  };
  for (std::size_t i = 0; i < pending_frees_.size();) {
    if (done(pending_frees_[i])) {
      const auto id = pending_frees_[i].block;
      pending_frees_[i] = std::move(pending_frees_.back());
      pending_frees_.pop_back();
      free_on_slot(id);
    } else {
      ++i;
    }
  }
}

void job_arena::poll_all() {
  poll_pending_frees();
  for (auto& slot : slots_) {
    if (slot.stream != nullptr) poll_slot(slot);
  }
}

bool job_arena::wait_all() {
  bool waited = false;
  for (auto& entry : pending_frees_) {
    for (const auto& use : entry.uses) use->synchronize();
    waited = true;
  }
  poll_pending_frees();
  for (auto& slot : slots_) {
    if (slot.stream == nullptr) continue;
    close_batch(slot);
    if (!slot.in_flight.empty()) {
      slot.in_flight.back().done->synchronize();
      waited = true;
    }
    poll_slot(slot);
  }
  return waited;
}

free_status job_arena::deallocate(std::size_t offset) {
  std::lock_guard lock(mutex_);
  const auto found = live_.find(offset);
  if (found == live_.end()) {
    ++stats_.invalid_frees;
    return free_status::not_allocated;
  }
  const auto id = found->second;
  live_.erase(found);
  block& b = blocks_[id];
  --segments_[b.segment].live_blocks;
  if (is_small_gradient(b)) {
    small_gradient_live_bytes_ -= b.size;
    --small_gradients_live_;
  }
  auto& per_kind = stats_.by_kind[index_of(b.kind)];
  per_kind.live_bytes -= b.size;
  ++per_kind.frees;
  ++stats_.frees;
  stats_.live_bytes -= b.size;
  context_.remove_live(b.size);
  trace(trace_op::free, stream_id_of(b.slot), b.kind, b.size, b.offset);
  if (retired_) {
    // Its streams were drained at retirement: nothing on the device can touch it any more.
    b.state = block_state::synced;
    index_insert(id, npos);
    promote(id);  // merges with synced neighbours; an emptied segment goes back
    check_invariants();
    return free_status::ok;
  }

  if (auto extra = extra_uses_.find(id); extra != extra_uses_.end()) {
    pending_free entry{id, {}};
    for (auto* user : extra->second) entry.uses.push_back(user->record());
    extra_uses_.erase(extra);
    b.state = block_state::pending;
    pending_frees_.push_back(std::move(entry));
    return free_status::ok;
  }
  free_on_slot(id);
  check_invariants();
  return free_status::ok;
}

bool job_arena::record_stream(std::size_t offset, device::stream& stream) {
  std::lock_guard lock(mutex_);
  const auto found = live_.find(offset);
  if (found == live_.end()) return false;
  if (slots_[blocks_[found->second].slot].stream == &stream) return true;
  auto& users = extra_uses_[found->second];
  if (std::find(users.begin(), users.end(), &stream) == users.end()) users.push_back(&stream);
  return true;
}

void job_arena::poll() {
  std::lock_guard lock(mutex_);
  for (auto& slot : slots_) {
    if (slot.stream != nullptr) close_batch(slot);
  }
  poll_all();
}

bool job_arena::synchronize() {
  std::lock_guard lock(mutex_);
  return wait_all();
}

void job_arena::detach_stream(const device::stream& stream) {
  std::lock_guard lock(mutex_);
  if (stream.id() >= slot_by_stream_id_.size() || slot_by_stream_id_[stream.id()] < 0) return;
  const auto index = static_cast<std::uint16_t>(slot_by_stream_id_[stream.id()]);
  for (const auto& [offset, id] : live_) {
    TANDEM_EXPECTS(blocks_[id].slot != index, usage_error,
                   "cannot detach stream '" + stream.name() + "' from job '" + name_ +
                       "': the job still has live allocations made on it; free them first");
  }
  stream_slot& slot = slots_[index];
  close_batch(slot);
  if (!slot.in_flight.empty()) slot.in_flight.back().done->synchronize();
  poll_slot(slot);
  TANDEM_ASSERT(slot.fifo_head == npos, "a drained stream still has unsynced blocks");
  slot = stream_slot{};
  slot_by_stream_id_[stream.id()] = -1;
}

std::size_t job_arena::release_all() {
  std::lock_guard lock(mutex_);
  // The device must be done with every block before its regions pass to other jobs, live or not.
  for (auto& entry : pending_frees_) {
    for (const auto& use : entry.uses) use->synchronize();
  }
  std::vector<bool> has_live(slots_.size(), false);
  for (const auto& [offset, id] : live_) has_live[blocks_[id].slot] = true;
  for (std::size_t index = 0; index < slots_.size(); ++index) {
    auto& slot = slots_[index];
    if (slot.stream == nullptr) continue;
    // Touch the stream only when it may have work we have no event for: a stream the job has
    // quiesced and since destroyed is then never dereferenced.
    if (has_live[index]) slot.open_bytes = std::max<std::size_t>(slot.open_bytes, 1);
    close_batch(slot);
    if (!slot.in_flight.empty()) slot.in_flight.back().done->synchronize();
  }
  std::size_t abandoned = 0;
  for (const auto& [offset, id] : live_) abandoned += blocks_[id].size;
  context_.remove_live(abandoned);
  for (auto& seg : segments_) {
    if (!seg.in_use) continue;
    trace(trace_op::region_return, 0, alloc_kind::unknown,
          seg.span.count * context_.options.region_size,
          seg.span.first * context_.options.region_size);  // before: see release_if_empty
    context_.region_supply.give_back(seg.span);
    if (auto* gate = context_.gate.load(std::memory_order_acquire)) {
      gate->returned(id_, seg.span.count * context_.options.region_size);
    }
    stats_.regions_returned += seg.span.count;
    seg.in_use = false;
  }
  stats_.reserved_bytes = 0;
  stats_.live_bytes = 0;
  for (auto& per_kind : stats_.by_kind) per_kind.live_bytes = 0;
  blocks_.clear();
  spare_blocks_.clear();
  segments_.clear();
  spare_segments_.clear();
  slots_.clear();
  slot_by_stream_id_.clear();
  for (auto& index : synced_) index.clear();
  live_.clear();
  extra_uses_.clear();
  pending_frees_.clear();
  return abandoned;
}

std::size_t job_arena::retire() {
  std::lock_guard lock(mutex_);
  TANDEM_ASSERT(!retired_, "a job retires once");
  // The device must be done with every block, live or free, before anything here changes hands:
  // a stream with live blocks gets an event even when nothing was freed on it.
  std::vector<bool> has_live(slots_.size(), false);
  for (const auto& [offset, id] : live_) has_live[blocks_[id].slot] = true;
  for (std::size_t index = 0; index < slots_.size(); ++index) {
    if (has_live[index] && slots_[index].stream != nullptr) {
      slots_[index].open_bytes = std::max<std::size_t>(slots_[index].open_bytes, 1);
    }
  }
  wait_all();  // every freed block becomes synced; an emptied segment goes back on promotion
  std::vector<std::uint32_t> free_blocks;
  for (const auto& index : synced_) {
    for (const auto& key : index) free_blocks.push_back(key.id);
  }
  for (const auto id : free_blocks) release_if_empty(id);
  for (auto& slot : slots_) {
    TANDEM_ASSERT(slot.fifo_head == npos && slot.in_flight.empty(),
                  "a drained stream still has unsynced blocks");
    slot = stream_slot{};
  }
  slot_by_stream_id_.clear();
  extra_uses_.clear();
  TANDEM_ASSERT(pending_frees_.empty(), "a drained job still has pending frees");
  retired_.store(true, std::memory_order_release);
  check_invariants();
  std::size_t left = 0;
  for (const auto& [offset, id] : live_) left += blocks_[id].size;
  return left;
}

bool job_arena::drained() const {
  std::lock_guard lock(mutex_);
  return retired_ && live_.empty();
}

std::uint32_t job_arena::stream_id_of(std::uint16_t slot) const {
  const auto* stream = slots_[slot].stream;
  return stream != nullptr ? stream->id() : 0;
}

void job_arena::set_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  limit_ = bytes;
}

std::size_t job_arena::limit() const {
  std::lock_guard lock(mutex_);
  return limit_;
}

own_room job_arena::room_for(std::size_t bytes, alloc_kind kind) {
  std::lock_guard lock(mutex_);
  poll_all();
  return {.free_bytes = stats_.reserved_bytes - stats_.live_bytes,
          .another_class_fits = tightest_in_other_classes(bytes, kind) != npos};
}

void job_arena::count_out_of_memory() {
  std::lock_guard lock(mutex_);
  ++stats_.out_of_memory;
}

void job_arena::count_host_sync() {
  std::lock_guard lock(mutex_);
  ++stats_.host_syncs;
}

job_stats job_arena::stats() const {
  std::lock_guard lock(mutex_);
  job_stats out = stats_;
  out.unsynced_bytes = 0;
  for (const auto& slot : slots_) {
    for (const auto& index : slot.unsynced) {
      for (const auto& key : index) out.unsynced_bytes += key.size;
    }
  }
  for (const auto& entry : pending_frees_) out.unsynced_bytes += blocks_[entry.block].size;
  return out;
}

void job_arena::check_invariants() const {
#if defined(TANDEM_EXPENSIVE_CHECKS)
  std::size_t accounted = 0;
  auto check_block = [&](std::uint32_t id, block_state state) {
    const block& b = blocks_[id];
    TANDEM_ASSERT(b.state == state, "a block is indexed under the wrong state");
    TANDEM_ASSERT(segments_[b.segment].in_use, "a block lies in a returned segment");
    if (b.next != npos) {
      TANDEM_ASSERT(blocks_[b.next].prev == id && blocks_[b.next].offset == b.offset + b.size,
                    "address neighbours are not linked or not contiguous");
    }
    accounted += b.size;
  };
  for (const auto& index : synced_) {
    for (const auto& key : index) check_block(key.id, block_state::synced);
  }
  for (const auto& slot : slots_) {
    std::size_t in_fifo = 0;
    std::uint64_t last_batch = 0;
    for (auto id = slot.fifo_head; id != npos; id = blocks_[id].fifo_next) {
      TANDEM_ASSERT(blocks_[id].batch >= last_batch, "the unsynced FIFO is out of batch order");
      last_batch = blocks_[id].batch;
      ++in_fifo;
    }
    std::size_t indexed = 0;
    for (const auto& index : slot.unsynced) {
      for (const auto& key : index) check_block(key.id, block_state::unsynced);
      indexed += index.size();
    }
    TANDEM_ASSERT(in_fifo == indexed, "the unsynced FIFO and index disagree");
  }
  for (const auto& [offset, id] : live_) {
    TANDEM_ASSERT(blocks_[id].offset == offset, "a live entry points at the wrong block");
    check_block(id, block_state::live);
  }
  for (const auto& entry : pending_frees_) check_block(entry.block, block_state::pending);
  TANDEM_ASSERT(accounted == stats_.reserved_bytes, "blocks do not tile the held regions");
#endif
}

void job_arena::trace(trace_op op, std::uint32_t stream, alloc_kind kind, std::size_t bytes,
                      std::size_t offset) const {
  if (auto* sink = context_.sink.load(std::memory_order_acquire); sink != nullptr) {
    sink->on_event({context_.now_ns(), op, id_, stream, kind, bytes, offset});
  }
}

}  // namespace tandem::memory::detail
