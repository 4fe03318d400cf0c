#include "tandem/schedule/policy_driver.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

#include "tandem/common/error.hpp"

namespace tandem::schedule {

policy_driver::policy_driver(policy& policy, const driver_clock& clock, std::size_t expected_jobs,
                             limit_sink limits)
    : policy_(policy),
      clock_(clock),
      expected_jobs_(expected_jobs),
      limits_(std::move(limits)),
      capabilities_(capabilities_of(policy)) {}

void policy_driver::set_budget_schedule(std::vector<budget_change> changes, budget_sink sink) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const budget_change& a, const budget_change& b) { return a.at_s < b.at_s; });
  schedule_ = std::move(changes);
  next_change_ = 0;
  budget_sink_ = std::move(sink);
}

std::optional<double> policy_driver::next_budget_change() const {
  if (next_change_ >= schedule_.size()) return std::nullopt;
  return schedule_[next_change_].at_s;
}

std::vector<policy_driver::budget_change> policy_driver::apply_due_budget_changes() {
  std::vector<budget_change> applied;
  while (next_change_ < schedule_.size() && schedule_[next_change_].at_s <= now()) {
    const auto bytes = schedule_[next_change_++].bytes;
    if (budget_sink_) budget_sink_(bytes);
    applied.push_back({now(), bytes});
    change_budget(bytes);
  }
  return applied;
}

memory_wait_verdict policy_driver::memory_wait(job_id job, bool restartable,
                                               std::size_t refused_bytes,
                                               std::size_t free_in_own_regions, bool can_make_room,
                                               bool falls_back) {
  // Let go already: while its exception unwinds, operations' end callbacks may still borrow
  // (a plan's prefetch), and a give-up now would turn the owed restart into a failure.
  if (restart_owed(job)) return memory_wait_verdict::restart_iteration;
  const auto [verdict, lets_go_at_boundary] = judge_memory_wait(
      job, restartable, refused_bytes > 0 && free_in_own_regions >= refused_bytes, can_make_room);
  if (lets_go_at_boundary) {
    owe_restart(*lets_go_at_boundary);
    boundary_restarts_.push_back(*lets_go_at_boundary);
  }
  switch (verdict) {
    case memory_wait_verdict::keep_waiting: {
      const auto [found, fresh] =
          memory_waits_.try_emplace(job, memory_waiter{next_memory_wait_, false, now()});
      if (fresh) ++next_memory_wait_;
      found->second.restartable = restartable;
      break;
    }
    case memory_wait_verdict::make_room:
      // Not waiting while it moves its own tensors; it asks afresh if that did not serve.
      end_memory_wait(job);
      break;
    case memory_wait_verdict::give_up:
      if (falls_back) {
        // Served elsewhere: it goes on, and nothing of it comes back for the others.
        end_memory_wait(job);
        break;
      }
      [[fallthrough]];
    case memory_wait_verdict::restart_iteration:
      // Its regions are coming back (restarted or failed): until it reports the restart or
      // leaves, the others wait for them rather than let go too.
      end_memory_wait(job);
      letting_go_[job] = {refused_bytes, verdict == memory_wait_verdict::restart_iteration};
      if (verdict == memory_wait_verdict::restart_iteration && !others_running(job)) {
        restarting_alone_.insert(job);
      }
      break;
  }
  return verdict;
}

policy_driver::memory_judgement policy_driver::judge_memory_wait(job_id job, bool restartable,
                                                                 bool fragmented,
                                                                 bool can_make_room) const {
  // Where nothing else would serve, a job that can free some of its own memory does that
  // first: a copy of its own costs less than any iteration's restart, and a failure nothing.
  const auto let_go = [&](memory_wait_verdict otherwise) {
    return can_make_room ? memory_wait_verdict::make_room : otherwise;
  };
  if (capabilities_.oom_baseline != nullptr) return {let_go(memory_wait_verdict::give_up)};
  // A change still to come may raise the budget; an iteration letting go returns its regions.
  if (next_change_ < schedule_.size()) return {memory_wait_verdict::keep_waiting};
  if (std::any_of(letting_go_.begin(), letting_go_.end(),
                  [&](const auto& other) { return other.first != job; })) {
    return {memory_wait_verdict::keep_waiting};
  }
  if (!others_running(job)) {
    // Alone: what others hold idle may go when they leave; the policy hears what this one
    // needs from its restart. Its own regions, when they hold room enough in pieces, are laid
    // out afresh by a rerun (their blocks free with the cut). Not when neither holds, nor when
    // restarting has stopped getting it further: nothing would change.
    const bool others_present = present_.size() > (present_.contains(job) ? 1u : 0u);
    return {
        let_go(restartable && (others_present || fragmented) && !alone_restarts_spent_.contains(job)
                   ? memory_wait_verdict::restart_iteration
                   : memory_wait_verdict::give_up)};
  }
  // The policy that judges borrows knows best whether the others will move. Otherwise another
  // running iteration that waits neither for regions nor for an event (at a group barrier)
  // will return regions when it ends.
  const bool others_move =
      capabilities_.borrows != nullptr
          ? capabilities_.borrows->others_will_move(job)
          : std::any_of(running_.begin(), running_.end(), [&](job_id other) {
              if (other == job || memory_waits_.contains(other)) return false;
              const auto found = waiting_.find(other);
              return found == waiting_.end() || found->second.until_s.has_value();
            });
  if (others_move) return {memory_wait_verdict::keep_waiting};
  // Every running iteration waits for another: this one makes room, or one lets go and
  // returns its regions.
  if (can_make_room) return {memory_wait_verdict::make_room};
  if (const auto chosen = iteration_to_let_go(job, restartable); chosen != job) {
    // Another waiting for regions will be told when it asks again; one waiting at a group
    // boundary asks nothing more, so it is told now.
    return {memory_wait_verdict::keep_waiting,
            memory_waits_.contains(chosen) ? std::nullopt : std::optional<job_id>(chosen)};
  }
  return {restartable ? memory_wait_verdict::restart_iteration : memory_wait_verdict::give_up};
}

void policy_driver::forget_alone_restarts(job_id job) {
  restarting_alone_.erase(job);
  alone_cut_peak_.erase(job);
  alone_restarts_spent_.erase(job);
}

bool policy_driver::others_running(job_id job) const {
  return std::any_of(running_.begin(), running_.end(), [&](job_id other) { return other != job; });
}

job_id policy_driver::iteration_to_let_go(job_id asking, bool restartable) const {
  // A restart costs the iteration's work so far, a failure the job: the latest to wait among
  // those that can restart lets go, or the latest of all when none can. `asking` may not have
  // been counted as waiting yet: then it is the latest.
  const auto asking_wait = memory_waits_.find(asking);
  const auto asking_order =
      asking_wait != memory_waits_.end() ? asking_wait->second.order : next_memory_wait_;
  job_id chosen = asking;
  auto rank = std::make_pair(restartable, asking_order);
  for (const auto& [other, other_wait] : memory_waits_) {
    if (other == asking || !running_.contains(other)) continue;
    const auto other_rank = std::make_pair(other_wait.restartable, other_wait.order);
    if (other_rank > rank) {
      chosen = other;
      rank = other_rank;
    }
  }
  if (rank.first) return chosen;
  // None waiting for regions can restart. An iteration held at a group boundary can, where its
  // job can roll back there: it has not begun its next group, so it loses its work so far where
  // the others would lose a job. Past its restartable stretch (an optimizer step that has
  // changed some weights) it cannot: run again, it would compute on half-updated weights.
  std::optional<std::pair<std::uint64_t, job_id>> at_boundary;
  for (const auto& [other, w] : waiting_) {
    if (other == asking || w.group == 0 || w.until_s || !w.restartable || !running_.contains(other))
      continue;
    if (!at_boundary || w.order > at_boundary->first) at_boundary = std::make_pair(w.order, other);
  }
  return at_boundary ? at_boundary->second : chosen;
}

void policy_driver::memory_wait_ended(job_id job) {
  end_memory_wait(job);
}

void policy_driver::end_memory_wait(job_id job) {
  const auto found = memory_waits_.find(job);
  if (found == memory_waits_.end()) return;
  memory_waited_s_[job] += now() - found->second.since_s;
  memory_waits_.erase(found);
}

double policy_driver::memory_waited_s(job_id job) const {
  const auto ended = memory_waited_s_.find(job);
  double seconds = ended == memory_waited_s_.end() ? 0.0 : ended->second;
  if (const auto waiting = memory_waits_.find(job); waiting != memory_waits_.end()) {
    seconds += now() - waiting->second.since_s;
  }
  return seconds;
}

void policy_driver::restart_iteration(job_id job, iteration_report report) {
  // The borrow it was refused ends the curve: the least the iteration needs.
  if (const auto found = letting_go_.find(job);
      found != letting_go_.end() && found->second.refused_bytes > 0) {
    report.held.steps.push_back(
        {report.held.duration_s, static_cast<std::int64_t>(found->second.refused_bytes)});
  }
  if (restarting_alone_.erase(job) > 0) {
    auto& furthest = alone_cut_peak_[job];
    const auto reached = report.held.peak();
    if (reached <= furthest) alone_restarts_spent_.insert(job);
    furthest = std::max(furthest, reached);
  }
  report.restarted = true;
  finish_iteration(job, report);
}

bool policy_driver::restart_owed(job_id job) const {
  const auto found = letting_go_.find(job);
  return found != letting_go_.end() && found->second.restarts;
}

void policy_driver::owe_restart(job_id job) {
  end_memory_wait(job);
  letting_go_[job] = {0, true};
}

void policy_driver::arrive(const job_info& job) {
  TANDEM_EXPECTS(!present_.contains(job.id), usage_error,
                 "job " + std::to_string(job.id) + " arrived twice");
  ++arrived_;
  present_.insert(job.id);
  policy_.on_arrival(job, now());
  apply_limits();
  event();
}

void policy_driver::depart(job_id job) {
  if (present_.erase(job) == 0) return;  // already gone: departing is idempotent
  waiting_.erase(job);
  running_.erase(job);
  end_memory_wait(job);
  letting_go_.erase(job);
  forget_alone_restarts(job);
  policy_.on_departure(job, now());
  apply_limits();
  event(job);
}

void policy_driver::change_budget(std::size_t bytes) {
  policy_.on_budget_change(bytes, now());
  apply_limits();
  event();
}

void policy_driver::offer_variants(job_id job, std::vector<footprint_variant> variants) {
  if (capabilities_.footprint == nullptr || !present_.contains(job)) return;
  capabilities_.footprint->offer_variants(job, std::move(variants));
  event();
}

void policy_driver::request_start(job_id job) {
  TANDEM_EXPECTS(present_.contains(job), usage_error,
                 "job " + std::to_string(job) + " asked to start before it arrived");
  TANDEM_EXPECTS(!waiting_.contains(job), usage_error,
                 "job " + std::to_string(job) + " asked to start while it waits already");
  waiting_[job] = {0, next_order_++, now(), std::nullopt};
  // Not an event for the others: only this job's own verdict is new. A start now is no job
  // switch either: the job did not wait for anyone.
  if (ask(job, false)) event();
}

void policy_driver::request_group(job_id job, std::size_t group, bool restartable) {
  TANDEM_EXPECTS(present_.contains(job), usage_error,
                 "job " + std::to_string(job) + " reached a group boundary before it arrived");
  TANDEM_EXPECTS(group >= 1, usage_error, "group 0 is the iteration's start: use request_start");
  // Only a policy with groups puts a job at a group boundary.
  if (capabilities_.groups != nullptr) capabilities_.groups->on_group_end(job, group - 1, now());
  waiting_[job] = {group, next_order_++, now(), std::nullopt, restartable};
  event();  // a group's end is an event (others at the barrier ask again), this job included
}

void policy_driver::finish_iteration(job_id job, const iteration_report& report) {
  running_.erase(job);
  end_memory_wait(job);
  letting_go_.erase(job);
  if (!report.restarted) forget_alone_restarts(job);
  policy_.on_iteration_end(job, report, now());
  event(job);
}

void policy_driver::withdraw(job_id job) {
  waiting_.erase(job);
}

void policy_driver::wake_due() {
  const double t = now();
  ask_in_order([&](const wait& w) { return w.until_s && *w.until_s <= t; });
}

std::optional<double> policy_driver::next_wake() const {
  std::optional<double> next;
  for (const auto& [job, w] : waiting_) {
    if (w.until_s && (!next || *w.until_s < *next)) next = w.until_s;
  }
  return next;
}

std::optional<double> policy_driver::wake_time(job_id job) const {
  const auto found = waiting_.find(job);
  return found == waiting_.end() ? std::nullopt : found->second.until_s;
}

std::vector<job_id> policy_driver::take_boundary_restarts() {
  return std::exchange(boundary_restarts_, {});
}

std::vector<grant> policy_driver::take_grants() {
  std::vector<grant> out(grants_.begin(), grants_.end());
  grants_.clear();
  return out;
}

void policy_driver::event(std::optional<job_id> switch_from) {
  if (switch_from) {
    switch_ = switch_mark{*switch_from, now(), false};
  } else {
    switch_.reset();
  }
  if (asking_) return;  // the pass under way asks everyone again
  ask_in_order([](const wait&) { return true; });
}

void policy_driver::ask_in_order(const std::function<bool(const wait&)>& which) {
  asking_ = true;
  // Passes until one grants nobody: a grant is an event, so those asked before it ask again.
  // The first pass asks only `which`; later ones, after a grant, ask everyone.
  bool everyone = false;
  for (bool granted = true; granted;) {
    granted = false;
    std::vector<std::pair<std::uint64_t, job_id>> order;
    for (const auto& [job, w] : waiting_) {
      if (everyone || which(w)) order.emplace_back(w.order, job);
    }
    std::sort(order.begin(), order.end());
    for (const auto& [unused, job] : order) {
      if (waiting_.contains(job) && ask(job, true)) {
        granted = true;
        switch_.reset();  // the start is the latest event now
      }
    }
    everyone = true;
  }
  asking_ = false;
}

bool policy_driver::ask(job_id job, bool after_event) {
  auto& w = waiting_.at(job);
  const double t = now();
  const auto verdict = w.group == 0 ? policy_.may_start(job, t)
                       : capabilities_.groups != nullptr
                           ? capabilities_.groups->may_enter_group(job, w.group, t)
                           : decision::start();
  switch (verdict.what) {
    case decision::verdict::wait_until:
      // Never a time in the past: the job would be asked again at once, forever.
      w.until_s = std::max(verdict.until_s, t + 1e-9);
      return false;
    case decision::verdict::wait_for_event:
      w.until_s.reset();
      return false;
    case decision::verdict::start:
      break;
  }
  grant given{job, w.group, t - w.asked_s, std::nullopt,
              w.group == 0 && capabilities_.footprint != nullptr
                  ? capabilities_.footprint->chosen_variant(job)
                  : 0};
  if (after_event && w.group == 0 && switch_ && switch_->from != job && !switch_->counted) {
    given.switch_from_s = switch_->at_s;
    switch_->counted = true;
  }
  const auto group = w.group;
  waiting_.erase(job);
  if (group == 0) {
    running_.insert(job);
    policy_.on_iteration_start(job, t);
  } else if (capabilities_.groups != nullptr) {
    capabilities_.groups->on_group_start(job, group, t);
  }
  grants_.push_back(given);
  return true;
}

void policy_driver::apply_limits() {
  if (!limits_) return;
  for (const auto job : present_) {
    limits_(job, capabilities_.partitions != nullptr ? capabilities_.partitions->memory_limit(job)
                                                     : std::nullopt);
  }
}

std::string policy_driver::held_up_by(job_id job) const {
  if (!running_.contains(job)) return {};
  if (const auto going = letting_go_.find(job); going != letting_go_.end()) {
    return going->second.restarts ? "letting go of its iteration to run it again"
                                  : "failing: no wait would bring the memory it asked for";
  }
  std::ostringstream text;
  text << std::fixed << std::setprecision(1);
  if (const auto waiting = memory_waits_.find(job); waiting != memory_waits_.end()) {
    text << "waiting for regions for " << now() - waiting->second.since_s << " s";
  } else if (const auto at_group = waiting_.find(job); at_group != waiting_.end()) {
    text << "waiting to enter group " << at_group->second.group << " for "
         << now() - at_group->second.asked_s << " s";
  }
  return text.str();
}

bool policy_driver::stalled() const {
  if (arrived_ < expected_jobs_ || present_.empty()) return false;
  if (next_change_ < schedule_.size()) return false;     // a budget change is an event to come
  if (waiting_.size() != present_.size()) return false;  // someone is doing something
  return std::none_of(waiting_.begin(), waiting_.end(),
                      [](const auto& item) { return item.second.until_s.has_value(); });
}

std::string policy_driver::stall_message(const std::function<std::string(job_id)>& name_of) const {
  // Every stalled job reports this message: a trace of a hundred would print a hundred names a
  // hundred times. A few name the case; the count says the rest.
  constexpr std::size_t named = 6;
  std::string names;
  std::size_t listed = 0;
  for (const auto job : present_) {
    if (listed++ == named) break;
    names += (names.empty() ? "" : ", ") + name_of(job);
  }
  if (present_.size() > named) names += " and " + std::to_string(present_.size() - named) + " more";
  return "policy '" + std::string(policy_.name()) + "' left every job (" + names +
         ") waiting with no event to come; this is a bug in the policy";
}

}  // namespace tandem::schedule
