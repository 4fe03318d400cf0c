// The replay behind predict and predict_together: a discrete-event simulation of every job's
// compute stream and the one copy channel, in virtual time (events, never time steps).
//
// Rules settled here (the header gives the outline):
// - Compute stream. Operations start in order; operation i starts at
//   max(end of i-1 + the recorded gap between them (idle time kept; negative where the recorded
//   operations overlap), end of any rerun run before it,
//   completion of the swap-ins it waits for). The recorded start times thus give the order and
//   the idle time between operations; without waiting the replay reproduces them exactly (the
//   empty plan gives sequence.iteration_s()). Reruns of recomputed tensors run before the
//   operation that needs them, each after whatever the stream ran last.
// - Memory. A tensor is taken at the start of its creating operation and released at the end of
//   its release operation (access_sequence::release_op); persistent tensors and other_bytes are
//   held from time 0 throughout. An operation's scratch tensors (access_sequence::is_scratch)
//   count as one block, access_sequence::scratch_bytes_by_op, for its duration. The curve has
//   one point per instant, what is held at its end: releases at an instant go before the
//   allocations at it.
// - Polls. The executor acts on swaps only when it looks: at each operation's start (when it is
//   reached, before it waits for anything or runs reruns) and at its end. A trigger's time is
//   when its operation was reached plus its delay; it is acted on at the first poll at or after
//   that. A poll, in order: copies out completed since the last one free their memory; copies
//   out whose release access has ended and whose trigger has come are issued; copies in whose
//   trigger has come are issued (taking the memory then) if their copy out has been seen
//   complete, else the swap is called off. Then, at an operation's start, whatever it (or a
//   rerun before it) reads that is still out is brought back the same way (the executor's
//   settle), and the operation waits for those copies in. Copies run one at a time on the
//   channel, in issue order, each bytes / copy_bandwidth seconds.
// - Called off. A swap whose copy in is due before its copy out was seen complete is called
//   off, as the executor does: the tensor never left, so its memory is held throughout, no copy
//   in is issued and its reader does not wait; a copy out under way still runs on the channel,
//   unused, and the iteration ends only once it is done (its wait counts as stall); one not
//   issued yet never is. Stretches across the boundary excepted: their copy out is the
//   previous iteration's (start_wrap), and they still leave at the iteration's end.
// - Recompute. The memory is freed at the end of the release access's operation and taken at the
//   start of the rerun (the creating operation once more, its recorded duration). A rerun's
//   input that is recomputed itself is rebuilt first and then stays (its own stretch ends
//   there); an input due back by swap-in for the same operation is waited for.
// - Stretches across iterations (Note [Stretches across iterations], plan.hpp), priced in the
//   steady state: consecutive iterations are replayed, each from what the one before left at
//   the boundary, until that no longer changes (a few iterations), and the last is the
//   prediction. The jobs of a replay start every iteration together, when the slowest one's
//   last operation ends (prediction::next_iteration_s); what the boundary carries is, per
//   wrapping decision, when its copy out completed (from the next iteration's start: negative
//   when before it), and the copies still on the channel then: one running (the rest of it,
//   first) and those queued (issued before the boundary: ahead of every copy of the next
//   iteration; none is issued after it, since a job's last poll is its last operation's end).
//   A wrapping tensor is held at the iteration's start until the first poll after its carried
//   copy out completes; its copy in is issued at its trigger's poll if that has been seen, else
//   the swap is called off for the iteration; its copy out is issued at its trigger's poll, or
//   at the last operation's end if that comes first (the executor's end of the iteration), and
//   frees the memory at the next poll, in the next iteration when it completes after the last
//   operation. The first iteration replayed (nothing carried) starts with the tensor already
//   out, as a run's first planned iteration does (the executor moves it out before).

#include "tandem/footprint/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <utility>

#include "stretches.hpp"
#include "tandem/common/error.hpp"

namespace tandem::footprint {

namespace {

struct memory_change {
  double at_s = 0;
  std::int64_t delta = 0;
};

/// Something the compute stream runs: an operation of the sequence, or the rerun of a
/// recomputed tensor's creating operation before it.
struct work_item {
  std::size_t op = 0;
  std::optional<std::size_t> rebuilds;  ///< the recompute decision a rerun serves
  std::vector<std::size_t> waits_for;   ///< swap decisions whose copy in must be complete
  /// The first item run for an operation: when it is first tried, the executor's callback
  /// for the operation's start comes (a poll; see "Polls").
  bool reaches = false;
  bool reached = false;
};

/// A decision's progress during the replay.
struct stretch_state {
  std::optional<double> released_s;  ///< end of the release access's operation
  std::optional<double> out_trigger_s;
  std::optional<double> in_trigger_s;
  std::optional<double> out_done_s;  ///< when its copy out completed
  bool out_noticed = false;          ///< a poll has seen the copy out complete: the memory is free
  bool in_issued = false;
  bool in_done = false;
  copy_timing timing;
};

/// A copy of iteration k still on the channel when iteration k + 1 starts.
struct carried_copy {
  double issue_s = 0;   ///< from iteration k + 1's start; 0 when issued (or running) before it
  double length_s = 0;  ///< what is left of it
};

/// What iteration k leaves to iteration k + 1 (Note [Stretches across iterations]).
struct boundary_carry {
  /// Per job, per decision: when a wrapping decision's copy out completed, from the next
  /// iteration's start; empty for the other decisions.
  std::vector<std::vector<std::optional<double>>> out_done_s;
  std::vector<carried_copy> copies;  ///< in issue order
};

bool settled(const boundary_carry& a, const boundary_carry& b, double tolerance_s) {
  const auto near = [&](double x, double y) { return std::abs(x - y) <= tolerance_s; };
  if (a.copies.size() != b.copies.size()) return false;
  for (std::size_t c = 0; c < a.copies.size(); ++c) {
    if (!near(a.copies[c].issue_s, b.copies[c].issue_s) ||
        !near(a.copies[c].length_s, b.copies[c].length_s))
      return false;
  }
  for (std::size_t j = 0; j < a.out_done_s.size(); ++j) {
    for (std::size_t k = 0; k < a.out_done_s[j].size(); ++k) {
      const auto& x = a.out_done_s[j][k];
      const auto& y = b.out_done_s[j][k];
      if (x.has_value() != y.has_value() || (x && !near(*x, *y))) return false;
    }
  }
  return true;
}

struct copy {
  std::size_t job = 0;
  std::size_t decision = 0;
  bool inbound = false;
  double issue_s = 0;
  std::optional<double> carried_s;  ///< the previous iteration's, this long (no decision here)
  double started_s = 0;
  double done_s = 0;
};

struct job_replay {
  job_replay(const access_sequence& s, const plan& p)
      : sequence_(s),
        plan_(p),
        lookup_(s, p),
        inputs_(detail::inputs_by_op(s)),
        outputs_(s.operations.size()),
        natural_releases_(s.operations.size()),
        scratch_(s.scratch_bytes_by_op()),
        releases_(s.operations.size()),
        out_triggers_(s.operations.size()),
        in_triggers_(s.operations.size()),
        stretches_(p.decisions.size()),
        rebuilt_(p.decisions.size(), false) {
    for (std::size_t t = 0; t < s.tensors.size(); ++t) {
      const auto& x = s.tensors[t];
      if (s.is_scratch(t)) continue;  // in scratch_
      if (x.created_by) outputs_[*x.created_by].push_back(t);
      if (const auto released = s.release_op(t)) natural_releases_[*released].push_back(t);
    }
    for (std::size_t k = 0; k < p.decisions.size(); ++k) {
      const auto& d = p.decisions[k];
      const auto span = detail::span_of(s, d);
      if (span.from_op < 0) {
        at_start_.push_back(k);
      } else {
        releases_[static_cast<std::size_t>(span.from_op)].push_back(k);
      }
      if (d.what == action::swap) {
        out_triggers_[d.swap_out.op].push_back(k);
        in_triggers_[d.swap_in.op].push_back(k);
      }
    }
  }

  const access_sequence& sequence_;
  const plan& plan_;
  detail::stretch_lookup lookup_;
  std::vector<std::vector<std::size_t>> inputs_;
  std::vector<std::vector<std::size_t>> outputs_;
  std::vector<std::vector<std::size_t>> natural_releases_;  ///< tensors, by release operation
  std::vector<std::size_t> scratch_;  ///< what each operation's scratch holds while it runs
  std::vector<std::vector<std::size_t>> releases_;  ///< decisions, by release access's operation
  std::vector<std::size_t> at_start_;               ///< decisions releasing at time 0
  std::vector<std::vector<std::size_t>> out_triggers_;
  std::vector<std::vector<std::size_t>> in_triggers_;
  std::vector<stretch_state> stretches_;
  std::vector<bool> rebuilt_;  ///< recompute decisions whose tensor is back (rerun planned)
  // What the next poll looks at (few at a time): swaps released whose copy out is not issued,
  // copies out not yet seen complete, swaps whose copy in is triggered and not issued.
  std::vector<std::size_t> outs_pending_;
  std::vector<std::size_t> outs_under_way_;
  std::vector<std::size_t> ins_pending_;

  std::size_t next_op = 0;
  std::deque<work_item> items;  ///< what runs before (and including) next_op
  double earliest_s = 0;        ///< when the front item could start without waiting
  bool shifted = false;         ///< an operation started later than recorded
  double previous_end_s = 0;    ///< when the last operation ended
  double stream_free_s = 0;     ///< when everything the stream ran so far has ended
  bool waiting = false;         ///< the front item waits for a copy in

  std::vector<memory_change> changes;
  prediction result;

  [[nodiscard]] bool done() const { return next_op == sequence_.operations.size(); }

  /// Decision `k` was called off and its tensor never leaves in this iteration: its copy out, if
  /// any, frees nothing. (A stretch across the boundary called off still leaves at the end.)
  [[nodiscard]] bool never_leaves(std::size_t k) const {
    return stretches_[k].timing.called_off && !plan_.decisions[k].wraps;
  }

  void take(double at_s, std::size_t bytes) {
    changes.push_back({at_s, static_cast<std::int64_t>(bytes)});
  }
  void give(double at_s, std::size_t bytes) {
    changes.push_back({at_s, -static_cast<std::int64_t>(bytes)});
  }

  /// The swap decision that has tensor `t` out before operation `op`, if any.
  [[nodiscard]] std::optional<std::size_t> swapped_before(std::size_t t, std::size_t op) const {
    const auto k = lookup_.out_before(t, op);
    if (k && plan_.decisions[*k].what == action::swap) return k;
    return std::nullopt;
  }

  /// Plans the reruns that must precede operation `op`, inputs first, then `op` itself.
  void prepare(std::size_t op) {
    for (const auto t : inputs_[op]) plan_rebuild(t, op);
    work_item own{op, std::nullopt, {}};
    for (const auto t : inputs_[op]) {
      if (const auto k = swapped_before(t, op)) own.waits_for.push_back(*k);
    }
    items.push_back(std::move(own));
    items.front().reaches = true;
  }

  void plan_rebuild(std::size_t t, std::size_t op) {
    const auto k = lookup_.out_before(t, op);
    if (!k || plan_.decisions[*k].what != action::recompute || rebuilt_[*k]) return;
    rebuilt_[*k] = true;
    const auto creator = *sequence_.tensors[t].created_by;
    for (const auto input : inputs_[creator]) plan_rebuild(input, op);
    work_item rerun{creator, *k, {}};
    for (const auto input : inputs_[creator]) {
      if (const auto swapped = swapped_before(input, op)) rerun.waits_for.push_back(*swapped);
    }
    items.push_back(std::move(rerun));
  }

  /// When the front item may start if nothing it reads is missing.
  [[nodiscard]] double front_earliest(bool after_rerun) const {
    const auto& front = items.front();
    if (front.rebuilds) return stream_free_s;
    const auto& op = sequence_.operations[front.op];
    double recorded = op.start_s;
    if (shifted) {
      // The recorded gap after the previous operation's end, kept: added to its actual end (not
      // the shift to the recorded start), so that back-to-back operations stay exactly so.
      const auto& previous = sequence_.operations[front.op - 1];
      recorded = previous_end_s + (op.start_s - (previous.start_s + previous.duration_s));
    }
    return after_rerun ? std::max(recorded, stream_free_s) : recorded;
  }

  [[nodiscard]] bool front_ready() const {
    return std::all_of(items.front().waits_for.begin(), items.front().waits_for.end(),
                       [&](std::size_t k) { return stretches_[k].in_done; });
  }
};

class replay {
 public:
  replay(std::span<const planned_job> jobs, const cost_options& options,
         const boundary_carry* carried)
      : options_(options), carried_(carried) {
    TANDEM_EXPECTS(std::isfinite(options.copy_bandwidth) && options.copy_bandwidth > 0, usage_error,
                   "cost_options::copy_bandwidth must be a number of bytes/s > 0");
    jobs_.reserve(jobs.size());
    for (const auto& job : jobs) {
      TANDEM_EXPECTS(job.sequence != nullptr && job.plan != nullptr, usage_error,
                     "planned_job needs a sequence and a plan");
      if (carried == nullptr) validate(*job.plan, *job.sequence);  // a later iteration: done
      jobs_.emplace_back(*job.sequence, *job.plan);
    }
  }

  std::vector<prediction> run() {
    if (carried_) {
      for (const auto& c : carried_->copies) {
        copies_.push_back({0, 0, false, c.issue_s, c.length_s, 0, 0});
        schedule(c.issue_s, event_kind::copy_issued, copies_.size() - 1);
      }
    }
    for (std::size_t j = 0; j < jobs_.size(); ++j) start_job(j);
    while (!events_.empty()) {
      const auto next = events_.top();
      events_.pop();
      now_ = next.at_s;
      switch (next.what) {
        case event_kind::try_item:
          try_item(next.index);
          break;
        case event_kind::copy_issued:
          channel_queue_.push_back(next.index);
          if (!channel_busy_) start_next_copy();
          break;
        case event_kind::copy_done:
          copy_done(next.index);
          break;
        case event_kind::operation_end:
          operation_ended(ends_[next.index].first, ends_[next.index].second);
          break;
      }
    }
    // The iteration ends once the copies out of swaps called off are done, as the executor
    // waits for them (those across the boundary go on into the next iteration).
    for (const auto& moved : copies_) {
      if (moved.carried_s || moved.inbound) continue;
      auto& job = jobs_[moved.job];
      if (!job.never_leaves(moved.decision)) continue;
      if (moved.done_s > job.result.iteration_s) {
        job.result.stall_s += moved.done_s - job.result.iteration_s;
        job.result.iteration_s = moved.done_s;
      }
    }
    double next_start = 0;
    for (const auto& job : jobs_) next_start = std::max(next_start, job.result.iteration_s);
    std::vector<prediction> out;
    for (auto& job : jobs_) {
      TANDEM_ASSERT(job.done(), "the replay stopped before a job's last operation");
      finish_curve(job);
      for (const auto& state : job.stretches_) job.result.copies.push_back(state.timing);
      job.result.next_iteration_s = next_start;
      if (carried_) {
        for (const auto& c : copies_) {
          if (c.carried_s) job.result.carried_copies.push_back({c.started_s, c.done_s});
        }
      }
      out.push_back(std::move(job.result));
    }
    return out;
  }

  /// What this iteration leaves to the next (run() first).
  [[nodiscard]] boundary_carry carry(const std::vector<prediction>& predicted) const {
    const double next_start = predicted.empty() ? 0.0 : predicted.front().next_iteration_s;
    boundary_carry c;
    for (const auto& moved : copies_) {
      if (moved.done_s <= next_start) continue;
      if (moved.started_s < next_start) {
        c.copies.push_back({0.0, moved.done_s - next_start});
      } else {
        c.copies.push_back(
            {std::max(0.0, moved.issue_s - next_start), moved.done_s - moved.started_s});
      }
    }
    // Issue order, as the channel took them (the one running first).
    std::stable_sort(
        c.copies.begin(), c.copies.end(),
        [](const carried_copy& a, const carried_copy& b) { return a.issue_s < b.issue_s; });
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      const auto& decisions = jobs_[j].plan_.decisions;
      c.out_done_s.emplace_back(decisions.size());
      for (std::size_t k = 0; k < decisions.size(); ++k) {
        if (decisions[k].wraps) c.out_done_s[j][k] = predicted[j].copies[k].out_done_s - next_start;
      }
    }
    return c;
  }

  [[nodiscard]] bool any_wraps() const {
    return std::any_of(jobs_.begin(), jobs_.end(), [](const job_replay& job) {
      return std::any_of(job.plan_.decisions.begin(), job.plan_.decisions.end(),
                         [](const decision& d) { return d.wraps; });
    });
  }

 private:
  enum class event_kind : std::uint8_t { try_item, copy_issued, copy_done, operation_end };
  struct event {
    double at_s = 0;
    std::uint64_t order = 0;  ///< ties at one instant: first scheduled, first processed
    event_kind what = event_kind::try_item;
    std::size_t index = 0;  ///< the job (try_item), the copy, or the operation ended (ends_)
    /// At one instant copies complete first: a poll then sees what completed at it.
    bool operator>(const event& other) const {
      if (at_s != other.at_s) return at_s > other.at_s;
      const bool done = what == event_kind::copy_done;
      const bool other_done = other.what == event_kind::copy_done;
      if (done != other_done) return other_done;
      return order > other.order;
    }
  };

  void schedule(double at_s, event_kind what, std::size_t index) {
    TANDEM_ASSERT(at_s >= now_, "an event scheduled in the past");
    events_.push({at_s, next_order_++, what, index});
  }

  void start_job(std::size_t j) {
    auto& job = jobs_[j];
    const auto& s = job.sequence_;
    std::size_t held = s.other_bytes;
    for (const auto& x : s.tensors) {
      if (!x.created_by) held += x.bytes;
    }
    job.take(0, held);
    for (std::size_t k = 0; k < job.plan_.decisions.size(); ++k) {
      if (job.plan_.decisions[k].wraps) start_wrap(j, k);
    }
    job.result.op_start_s.assign(s.operations.size(), 0.0);
    for (const auto k : job.at_start_) release(j, k, 0);
    if (job.done()) return;
    job.prepare(0);
    job.earliest_s = job.front_earliest(false);
    schedule(job.earliest_s, event_kind::try_item, j);
  }

  void try_item(std::size_t j) {
    auto& job = jobs_[j];
    if (auto& front = job.items.front(); front.reaches && !front.reached) {
      front.reached = true;
      operation_reached(j, job.items.back().op);
    }
    if (!job.front_ready()) {
      job.waiting = true;  // a copy in completing tries again
      return;
    }
    job.waiting = false;
    const auto item = std::move(job.items.front());
    job.items.pop_front();
    const auto& op = job.sequence_.operations[item.op];
    const double start = now_;
    const double end = start + op.duration_s;
    job.result.stall_s += start - job.earliest_s;
    job.stream_free_s = std::max(job.stream_free_s, end);
    if (item.rebuilds) {
      job.take(start, job.sequence_.tensors[job.plan_.decisions[*item.rebuilds].tensor].bytes);
      job.result.recompute_s += op.duration_s;
    } else {
      run_operation(j, item.op, start, end);
    }
    if (job.items.empty()) {
      if (job.done()) return;
      job.prepare(job.next_op);
      job.earliest_s = job.front_earliest(false);
    } else {
      job.earliest_s = job.front_earliest(true);
    }
    schedule(std::max(job.earliest_s, now_), event_kind::try_item, j);
  }

  void run_operation(std::size_t j, std::size_t op, double start, double end) {
    auto& job = jobs_[j];
    const auto& s = job.sequence_;
    job.shifted = job.shifted || start != s.operations[op].start_s;
    job.result.op_start_s[op] = start;
    job.previous_end_s = end;
    job.result.iteration_s = std::max(job.result.iteration_s, end);
    for (const auto t : job.outputs_[op]) job.take(start, s.tensors[t].bytes);
    if (job.scratch_[op] > 0) {
      job.take(start, job.scratch_[op]);
      job.give(end, job.scratch_[op]);
    }
    for (const auto t : job.natural_releases_[op]) job.give(end, s.tensors[t].bytes);
    job.next_op = op + 1;
    // Not from next_op then: where recorded operations overlap, the next may start before this
    // one ends.
    ends_.emplace_back(j, op);
    schedule(end, event_kind::operation_end, ends_.size() - 1);
  }

  /// The executor's callback for operation `op`'s start (before it waits for anything): its
  /// triggers start counting, then a poll, then what the operation reads comes back now if no
  /// trigger brought it (the executor's settle).
  void operation_reached(std::size_t j, std::size_t op) {
    auto& job = jobs_[j];
    for (const auto k : job.out_triggers_[op])
      job.stretches_[k].out_trigger_s = now_ + job.plan_.decisions[k].swap_out.delay_s;
    for (const auto k : job.in_triggers_[op]) {
      job.stretches_[k].in_trigger_s = now_ + job.plan_.decisions[k].swap_in.delay_s;
      job.ins_pending_.push_back(k);
    }
    poll(j);
    for (const auto& item : job.items) {
      for (const auto k : item.waits_for) {
        if (!job.stretches_[k].in_issued) bring_in(j, k);
      }
    }
  }

  /// The executor's callback for an operation's end: the release accesses it was, then a poll;
  /// after the last operation, swaps across the boundary not issued yet leave (the executor's
  /// end of the iteration).
  void operation_ended(std::size_t j, std::size_t op) {
    auto& job = jobs_[j];
    for (const auto k : job.releases_[op]) release(j, k, now_);
    poll(j);
    if (op + 1 != job.sequence_.operations.size()) return;
    for (const auto k : std::vector<std::size_t>(job.outs_pending_)) {
      if (job.plan_.decisions[k].wraps) issue_copy_out(j, k);
    }
  }

  /// What the executor does whenever it looks (Polls): copies out seen complete free their
  /// memory; copies out whose release and trigger have come are issued; copies in whose
  /// trigger has come are issued, or their swap called off.
  void poll(std::size_t j) {
    auto& job = jobs_[j];
    std::erase_if(job.outs_under_way_, [&](std::size_t k) {
      auto& state = job.stretches_[k];
      if (!state.out_done_s || *state.out_done_s > now_) return false;
      notice_out(j, k);
      return true;
    });
    for (const auto k : std::vector<std::size_t>(job.outs_pending_)) {
      const auto& state = job.stretches_[k];
      if (*state.released_s <= now_ && state.out_trigger_s && *state.out_trigger_s <= now_)
        issue_copy_out(j, k);
    }
    for (const auto k : std::vector<std::size_t>(job.ins_pending_)) {
      if (*job.stretches_[k].in_trigger_s <= now_) bring_in(j, k);
    }
  }

  /// A poll has seen decision `k`'s copy out complete: its memory is free, unless the swap was
  /// called off.
  void notice_out(std::size_t j, std::size_t k) {
    auto& job = jobs_[j];
    auto& state = job.stretches_[k];
    state.out_noticed = true;
    if (job.never_leaves(k)) return;
    job.give(now_, job.sequence_.tensors[job.plan_.decisions[k].tensor].bytes);
  }

  /// A wrapping decision at the iteration's start: out since the previous iteration's copy out
  /// completed (in a run's first iteration, since before it started: the executor moves it out
  /// before the first planned iteration).
  void start_wrap(std::size_t j, std::size_t k) {
    auto& job = jobs_[j];
    auto& state = job.stretches_[k];
    const auto carried = carried_ ? carried_->out_done_s[j][k] : std::nullopt;
    const double done = carried.value_or(-std::numeric_limits<double>::infinity());
    state.out_done_s = done;
    if (done <= 0) {
      state.out_noticed = true;
      job.give(0, job.sequence_.tensors[job.plan_.decisions[k].tensor].bytes);
    } else {
      job.outs_under_way_.push_back(k);  // seen by the first poll after it completes
    }
  }

  /// Decision `k`'s tensor has had its release access, which ended at `at_s`.
  void release(std::size_t j, std::size_t k, double at_s) {
    auto& job = jobs_[j];
    const auto& d = job.plan_.decisions[k];
    if (d.what == action::recompute) {
      job.give(at_s, job.sequence_.tensors[d.tensor].bytes);
      return;
    }
    job.stretches_[k].released_s = at_s;
    if (!job.never_leaves(k)) job.outs_pending_.push_back(k);
  }

  void issue_copy_out(std::size_t j, std::size_t k) {
    auto& job = jobs_[j];
    std::erase(job.outs_pending_, k);
    auto& state = job.stretches_[k];
    state.out_done_s.reset();  // a stretch across the boundary: the previous one was carried
    state.out_noticed = false;
    copies_.push_back({j, k, false, now_, std::nullopt, 0, 0});
    job.outs_under_way_.push_back(k);
    schedule(now_, event_kind::copy_issued, copies_.size() - 1);
  }

  /// Decision `k`'s copy in is due (its trigger came, or its reader did): issued when the
  /// copy out has been seen complete, else the swap is called off: the tensor has not left
  /// (its copy out under way, queued, or not issued, which it then never is).
  void bring_in(std::size_t j, std::size_t k) {
    auto& job = jobs_[j];
    std::erase(job.ins_pending_, k);
    auto& state = job.stretches_[k];
    if (state.in_issued) return;
    if (!state.out_noticed) {
      std::erase(job.outs_pending_, k);
      // A stretch across the boundary whose carried copy out is still under way: the memory
      // it was to free stays.
      if (job.plan_.decisions[k].wraps) std::erase(job.outs_under_way_, k);
      call_off(j, k);
      return;
    }
    state.in_issued = true;
    job.take(now_, job.sequence_.tensors[job.plan_.decisions[k].tensor].bytes);
    copies_.push_back({j, k, true, now_, std::nullopt, 0, 0});
    schedule(now_, event_kind::copy_issued, copies_.size() - 1);
  }

  /// Decision `k`'s tensor is needed back before its copy out completed: it stays.
  void call_off(std::size_t j, std::size_t k) {
    auto& job = jobs_[j];
    auto& state = job.stretches_[k];
    state.in_issued = true;
    state.in_done = true;
    state.timing.called_off = true;
    job.result.called_off_bytes += job.sequence_.tensors[job.plan_.decisions[k].tensor].bytes;
    if (job.waiting) {
      job.waiting = false;
      schedule(now_, event_kind::try_item, j);
    }
  }

  void start_next_copy() {
    if (channel_queue_.empty()) return;
    const auto c = channel_queue_.front();
    channel_queue_.pop_front();
    channel_busy_ = true;
    auto& moved = copies_[c];
    moved.started_s = now_;
    if (moved.carried_s) {
      schedule(now_ + *moved.carried_s, event_kind::copy_done, c);
      return;
    }
    const auto& job = jobs_[moved.job];
    const auto bytes = job.sequence_.tensors[job.plan_.decisions[moved.decision].tensor].bytes;
    auto& timing = jobs_[moved.job].stretches_[moved.decision].timing;
    (moved.inbound ? timing.in_issued_s : timing.out_issued_s) = moved.issue_s;
    (moved.inbound ? timing.in_started_s : timing.out_started_s) = now_;
    schedule(now_ + static_cast<double>(bytes) / options_.copy_bandwidth, event_kind::copy_done, c);
  }

  void copy_done(std::size_t c) {
    channel_busy_ = false;
    copies_[c].done_s = now_;
    start_next_copy();
    const auto moved = copies_[c];
    if (moved.carried_s) return;
    auto& job = jobs_[moved.job];
    const auto bytes = job.sequence_.tensors[job.plan_.decisions[moved.decision].tensor].bytes;
    auto& state = job.stretches_[moved.decision];
    (moved.inbound ? state.timing.in_done_s : state.timing.out_done_s) = now_;
    if (!moved.inbound) {
      state.out_done_s = now_;  // its memory is free from the next poll (notice_out)
      if (!job.never_leaves(moved.decision)) job.result.swapped_out_bytes += bytes;
      return;
    }
    job.result.swapped_in_bytes += bytes;
    state.in_done = true;
    if (job.waiting) {
      job.waiting = false;
      schedule(now_, event_kind::try_item, moved.job);
    }
  }

  static void finish_curve(job_replay& job) {
    auto& changes = job.changes;
    std::stable_sort(
        changes.begin(), changes.end(),
        [](const memory_change& a, const memory_change& b) { return a.at_s < b.at_s; });
    // Only what is held at the end of an instant counts: releases at an instant go before the
    // allocations at it (an operation of zero duration does not hold its inputs and outputs at
    // once).
    std::int64_t held = 0;
    auto& curve = job.result.curve;
    for (const auto& change : changes) {
      held += change.delta;
      if (!curve.empty() && curve.back().at_s == change.at_s) {
        curve.back().bytes = static_cast<std::size_t>(std::max<std::int64_t>(held, 0));
      } else {
        curve.push_back({change.at_s, static_cast<std::size_t>(std::max<std::int64_t>(held, 0))});
      }
    }
    TANDEM_ASSERT(held >= 0, "the replay released more than it held");
    for (const auto& point : curve)
      job.result.peak_bytes = std::max(job.result.peak_bytes, point.bytes);
  }

  cost_options options_;
  const boundary_carry* carried_ = nullptr;  ///< null: a run's first iteration
  std::vector<job_replay> jobs_;
  std::vector<copy> copies_;
  std::vector<std::pair<std::size_t, std::size_t>> ends_;  ///< job, operation (operation_end)
  std::deque<std::size_t> channel_queue_;
  bool channel_busy_ = false;
  std::priority_queue<event, std::vector<event>, std::greater<>> events_;
  std::uint64_t next_order_ = 0;
  double now_ = 0;
};

}  // namespace

prediction predict(const access_sequence& sequence, const plan& p, const cost_options& options) {
  const planned_job job{&sequence, &p};
  return predict_together(std::span<const planned_job>(&job, 1), options).front();
}

std::vector<prediction> predict_together(std::span<const planned_job> jobs,
                                         const cost_options& options) {
  replay first(jobs, options, nullptr);
  auto predicted = first.run();
  if (!first.any_wraps()) return predicted;
  // Note [Stretches across iterations]: iterations from what the one before left, until the
  // boundary settles.
  auto carried = first.carry(predicted);
  constexpr int max_iterations = 8;
  for (int i = 0; i < max_iterations; ++i) {
    replay next(jobs, options, &carried);
    predicted = next.run();
    auto left = next.carry(predicted);
    const double tolerance = 1e-12 * std::max(1.0, predicted.front().next_iteration_s);
    if (settled(left, carried, tolerance)) break;
    carried = std::move(left);
  }
  return predicted;
}

plan_ratios ratios_of(std::size_t vanilla_peak_bytes, std::size_t planned_peak_bytes,
                      double vanilla_s, double planned_s) {
  plan_ratios r;
  if (vanilla_peak_bytes > 0)
    r.msr = 1.0 - static_cast<double>(planned_peak_bytes) / static_cast<double>(vanilla_peak_bytes);
  if (vanilla_s > 0) r.eor = (planned_s - vanilla_s) / vanilla_s;
  if (r.msr > 0) r.cbr = r.eor <= 0 ? std::numeric_limits<double>::infinity() : r.msr / r.eor;
  return r;
}

plan_measures measure(const access_sequence& sequence, const plan& p, const cost_options& options) {
  const auto vanilla = predict(sequence, plan{}, options);
  const auto planned = predict(sequence, p, options);
  plan_measures m;
  m.vanilla_peak_bytes = vanilla.peak_bytes;
  m.planned_peak_bytes = planned.peak_bytes;
  m.vanilla_s = vanilla.iteration_s;
  m.planned_s = planned.iteration_s;
  const auto ratios =
      ratios_of(vanilla.peak_bytes, planned.peak_bytes, vanilla.iteration_s, planned.iteration_s);
  m.msr = ratios.msr;
  m.eor = ratios.eor;
  m.cbr = ratios.cbr;
  std::set<std::size_t> swapped;
  std::set<std::size_t> recomputed;
  for (const auto& d : p.decisions)
    (d.what == action::swap ? swapped : recomputed).insert(d.tensor);
  m.swapped_tensors = swapped.size();
  m.recomputed_tensors = recomputed.size();
  m.bytes_moved = planned.swapped_out_bytes + planned.swapped_in_bytes;
  return m;
}

}  // namespace tandem::footprint
