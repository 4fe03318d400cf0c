#include "tandem/schedule/iteration_claims.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace tandem::schedule {

// Note [Waiting for regions cannot deadlock]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Co-located iterations that take regions while others return them can block each other: two
// forward passes that each need one more region than the budget leaves would wait forever. The
// claims avoid that with the banker's rule. Call a state safe when the running iterations can
// be ordered so that each, given the regions free now plus what the ones before it return when
// they end (all but what they keep between iterations), can grow to its claim.
//
// 1. Every borrow is granted only into a safe state (try_reserve), and an iteration starts only
//    into one (admits_start). Returns only add free regions, iteration ends only lower claims,
//    and a departure removes an iteration, so no other event makes a safe state unsafe.
// 2. In a safe state, the first iteration of the order can take up to its claim: a request of
//    its within its claim leaves the state safe (its need and the free regions shrink alike,
//    and the rest of the order is unchanged), so it is granted. That needs claims that never
//    rise within an iteration: a claim read off what a job holds can (a backward pass that
//    takes a region again looks earlier in the curve), so each claim is capped by the lowest
//    estimate made so far in the iteration, which still bounds the rest of it. Hence while every
//    iteration stays within its claim, at least one running iteration is never refused; it ends,
//    returns its transient regions, the state stays safe, and by induction every waiting iteration
//    is eventually granted. A wait lasts at most until the iterations ahead of it in the order end.
// 3. Claims are predictions. An iteration that asks beyond its claim (a misprediction) is
//    judged with its claim raised to what it asks. If that leaves no safe order, it waits while
//    some other iteration can still move. When every running iteration is waiting, the one
//    that started first among those whose request fits the budget is let through regardless
//    (the budget itself is never exceeded). Only when no waiting request fits the budget at all
//    can nothing move (others_will_move is false): then one waiting iteration lets go, chosen by
//    the policy driver, which restarts it where its executor can (its regions return to the
//    others, and it runs again from its start) and fails it otherwise. That needs iterations
//    that together outgrow their predictions beyond the budget; scrooge sends a job that
//    exceeded its claim, or restarted, back to running alone (Zico §5.3's fallback), so it
//    cannot repeat.

void iteration_claims::start(job_id job, std::shared_ptr<const indexed_curve> curve) {
  auto& e = jobs_[job];
  e.running = true;
  e.events = 0;
  e.seniority = next_seniority_++;
  e.curve = std::move(curve);
  e.waiting_for.reset();
  e.exceeded = false;
  e.refusals = 0;
  e.most_held = e.held;
  e.ceiling = std::numeric_limits<std::size_t>::max();
}

void iteration_claims::end(job_id job) {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return;
  found->second.running = false;
  found->second.waiting_for.reset();
  forget_if_gone(found);
}

void iteration_claims::depart(job_id job) {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return;
  found->second.departed = true;
  found->second.running = false;
  found->second.waiting_for.reset();
  forget_if_gone(found);
}

void iteration_claims::forget_if_gone(std::map<job_id, entry>::iterator found) {
  if (found->second.departed && found->second.held == 0) jobs_.erase(found);
}

std::size_t iteration_claims::claim_of(const entry& e) const {
  if (!e.running || !e.curve) return e.held;
  return std::max(e.held, std::min(e.ceiling, estimate(e)));
}

void iteration_claims::moved(entry& e) const {
  if (e.running) ++e.events;
  e.most_held = std::max(e.most_held, e.held);
  if (e.running && e.curve) e.ceiling = std::min(e.ceiling, estimate(e));
}

std::size_t iteration_claims::estimate(const entry& e) const {
  const auto& curve = *e.curve;
  // A measured curve predicts the next iteration only to within a borrow or so (where a block
  // lands, when a region empties): claims keep margin_borrows_ borrows (indexed_curve::
  // margin_unit) beyond it, so that a peak a region higher than last time does not leave two
  // co-located iterations waiting for each other (two ResNet-20 at a 28 MiB budget, 2 MiB regions:
  // 7 runs of 80 lost a job without the margin, none of 80 with one borrow of it).
  const std::size_t margin = margin_borrows_ * curve.margin_unit;
  if (!past_peak(e)) return curve.peak + margin;
  // Past the peak, the iteration's position is read off the bytes it holds, not off how many
  // borrows and returns it made: regions emptied and taken again mid-pass make those counts
  // drift between iterations, while a backward pass's holdings fall steadily. The claim is the
  // most the curve holds from the first point past the peak at or below what the job holds now.
  // The next iteration's backward pass takes regions again where and when it likes: the largest
  // such rise of the curve is added, so that a bump moved in time stays within the claim.
  const std::size_t rise = margin > 0 ? std::max(curve.post_peak_rise, margin) : 0;
  return std::min(curve.peak, curve.most_held_past_peak_from(e.held) + rise) + margin;
}

bool iteration_claims::past_peak(const entry& e) {
  const auto& curve = *e.curve;
  if (e.most_held >= curve.peak) return true;
  // An iteration may peak a little lower than the one that predicts it (a region's worth of
  // fragmentation). It counts as past its peak only on three signs together: it came within a
  // sixteenth of its growth of the peak, it made at least as many region moves as the curve
  // makes up to the peak, and it has since returned that much again. Any one alone misreads a
  // forward pass that frees temporaries on its way up, and a claim below what the iteration
  // still takes could let co-located iterations deadlock (Note [Waiting for regions cannot
  // deadlock], 3).
  const std::size_t growth = curve.peak - std::min(curve.peak, curve.curve.held_at_start);
  const std::size_t tolerance = growth / 16;
  return e.most_held + tolerance >= curve.peak && e.events > curve.peak_step + 1 &&
         e.held + tolerance <= e.most_held;
}

std::size_t iteration_claims::after_of(const entry& e) const {
  if (!e.running || !e.curve) return e.held;
  return std::min(claim_of(e), e.curve->curve.held_at_end());
}

bool iteration_claims::grantable(job_id job, std::size_t bytes) const {
  return total_held_ + bytes <= budget_ && safe(std::nullopt, nullptr, job, bytes);
}

bool iteration_claims::safe(std::optional<job_id> starting, const indexed_curve* curve,
                            std::optional<job_id> growing, std::size_t bytes) const {
  // Signed: a lowered budget may sit below what is held until regions come back.
  std::int64_t free = static_cast<std::int64_t>(budget_) - static_cast<std::int64_t>(total_held_) -
                      static_cast<std::int64_t>(growing ? bytes : 0);
  pending_.clear();
  const auto add = [&](const entry& e) {
    const auto claim = static_cast<std::int64_t>(claim_of(e));
    const auto held = static_cast<std::int64_t>(e.held);
    pending_.push_back({claim - held, held - static_cast<std::int64_t>(after_of(e))});
  };
  bool starting_seen = false;
  for (const auto& [id, e] : jobs_) {
    if (starting && id == *starting) {
      starting_seen = true;
      continue;
    }
    if (!e.running) continue;
    if (growing && id == *growing) {
      entry grown = e;  // as it would be with the borrow granted
      grown.held += bytes;
      moved(grown);
      add(grown);
    } else {
      add(e);
    }
  }
  if (starting) {
    // The job as it would be once started: what it holds, claiming the curve from its start.
    entry trial;
    if (starting_seen) trial.held = jobs_.at(*starting).held;
    trial.most_held = trial.held;
    trial.ceiling = std::numeric_limits<std::size_t>::max();
    trial.running = true;
    trial.curve = std::shared_ptr<const indexed_curve>(std::shared_ptr<void>(), curve);
    add(trial);
  }
  // Finishing one only adds free regions, so any iteration that can finish now may go first:
  // greedy finds an order whenever one exists. A handful of iterations: quadratic is cheap.
  while (!pending_.empty()) {
    const auto next = std::find_if(pending_.begin(), pending_.end(),
                                   [&](const step& s) { return s.need <= free; });
    if (next == pending_.end()) return false;
    free += next->gives_back;
    pending_.erase(next);
  }
  return true;
}

bool iteration_claims::stuck(job_id job, const entry& e) const {
  // A wait noted earlier may be over already (returns came since): only a request that would be
  // refused now counts, or a stale mark could let another iteration through unsafely.
  return e.waiting_for && !grantable(job, *e.waiting_for);
}

bool iteration_claims::all_others_waiting(job_id job) const {
  return std::all_of(jobs_.begin(), jobs_.end(), [&](const auto& item) {
    return item.first == job || !item.second.running || stuck(item.first, item.second);
  });
}

std::optional<job_id> iteration_claims::next_to_insist() const {
  std::optional<job_id> first;
  std::uint64_t earliest = 0;
  for (const auto& [id, e] : jobs_) {
    if (!e.running || !e.waiting_for || total_held_ + *e.waiting_for > budget_) continue;
    if (!first || e.seniority < earliest) {
      first = id;
      earliest = e.seniority;
    }
  }
  return first;
}

bool iteration_claims::try_reserve(job_id job, std::size_t bytes) {
  auto& e = jobs_[job];
  const std::size_t claim_before = claim_of(e);
  if (!grantable(job, bytes)) {
    e.waiting_for = bytes;
    ++e.refusals;
    // Nobody else can move: the first waiter whose request fits goes through (the Note, 3).
    if (!e.running || total_held_ + bytes > budget_ || !all_others_waiting(job) ||
        next_to_insist() != job) {
      return false;
    }
    ++insisted_;
  }
  e.held += bytes;
  total_held_ += bytes;
  moved(e);
  if (e.running && e.curve && e.held > claim_before) e.exceeded = true;
  e.waiting_for.reset();
  return true;
}

void iteration_claims::cancel(job_id job, std::size_t bytes) {
  give_back(job, bytes, false);
}

void iteration_claims::returned(job_id job, std::size_t bytes) {
  give_back(job, bytes, true);
}

void iteration_claims::give_back(job_id job, std::size_t bytes, bool moved_on) {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return;
  auto& e = found->second;
  bytes = std::min(bytes, e.held);
  e.held -= bytes;
  total_held_ -= bytes;
  if (moved_on) {
    moved(e);
  } else if (e.running && e.events > 0) {
    --e.events;  // a cancelled borrow never happened
  }
  forget_if_gone(found);
}

bool iteration_claims::others_will_move(job_id job) const {
  const bool someone_moves = std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& item) {
    return item.first != job && item.second.running && !stuck(item.first, item.second);
  });
  // Or the first waiter whose request fits goes through, and the rest follow it.
  return someone_moves || next_to_insist().has_value();
}

bool iteration_claims::admits_start(job_id job, const indexed_curve& curve) const {
  return safe(job, &curve);
}

std::size_t iteration_claims::held(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? 0 : found->second.held;
}

std::size_t iteration_claims::claim(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? 0 : claim_of(found->second);
}

bool iteration_claims::exceeded_claim(job_id job) const {
  const auto found = jobs_.find(job);
  return found != jobs_.end() && found->second.exceeded;
}

std::int64_t iteration_claims::refusals(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? 0 : found->second.refusals;
}

}  // namespace tandem::schedule
