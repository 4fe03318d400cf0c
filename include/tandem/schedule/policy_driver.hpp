#pragma once
// The one driver of the policy contract (policy.hpp), shared by the runtime (real jobs on their
// own threads, wall-clock time: runtime::policy_gate) and the simulator (jobs replayed from
// profiles in virtual time: sim/simulator.cpp). Whoever executes the jobs reports what they do;
// the driver turns that into the policy's events, asks the waiting jobs again after every event
// in the order they began to wait, and hands out grants. A grant means the policy's start
// verdict was given and reported (on_iteration_start or on_group_start): the executor lets the
// job go. So the two executors cannot drift apart in when they ask, in what order, or in how
// they judge a stall: that logic exists once, here.
//
// Events (each makes every waiting job ask again): an arrival, a departure, an iteration's end,
// a group's end, a budget change, and a start (a policy may make others wait for it). A job
// waits after request_start or request_group until it is granted; a *wait until t* verdict is
// asked again by wake_due() once the clock reaches t (next_wake() says when), a *wait for the
// next event* verdict at the next event.
//
// Stall: when every job has arrived, no budget change is left, every present job waits for an
// event, and none waits for a time, nothing can ever move them (stalled(); stall_message() says so,
// naming the jobs). Jobs doing anything else (setup, an iteration, a borrow wait) keep the run
// alive.
//
// Memory limits (a policy that partitions memory, static) go to `limit_sink` after every
// arrival, departure and budget change: the runtime writes them into the pool, the simulator
// checks them at every borrow.
//
// Budget schedules: the driver keeps the workload's timed budget changes; the executor applies
// the due ones (apply_due_budget_changes) when the clock reaches next_budget_change(), and the
// new budget goes to `budget_sink` before the policy hears of it.
//
// Memory waits: a region borrow the budget (or the policy's borrow_arbiter) refuses makes the
// job wait mid-iteration instead of failing, under every policy but the fails_on_oom
// baselines, while waiting can help: another running iteration may return regions, or a
// budget change is still to come (memory_wait). Executors report the waits
// (memory_wait, memory_wait_ended), so that iterations waiting for each other are seen. When every
// running iteration waits for another (predictions that were wrong together, a budget lowered
// under them), one lets go: the one that began to wait last among those whose executor can
// restart them (cut the iteration short, return what it took, roll its job back to the
// iteration's start and ask to start it again: a restarted iteration, reported with
// iteration_report::restarted), so that a misprediction costs time and never a job. Before any
// iteration lets go, the asking one makes room in its own memory when it can (a planned job's
// executor swaps a tensor of its plan out of turn, a passive swapper one of its job's): that
// costs a copy, where a restart costs the iteration's work so far. Only when none of the
// waiting iterations can restart or make room (the runtime's inside an operation's callback or
// its optimizer step, with nothing of its own left to move) does one let go that waits at a
// group boundary for a grant (NodeGroup's) where it can restart: it restarts there, telling the
// executor through take_boundary_restarts. Only when there is none either does the latest to wait
// fail. An iteration that waits alone restarts when other jobs are present (their memory may go
// when they leave; the restarted iteration's report ends with the borrow it was refused, so that
// the policy knows what it needs at least beside them) and fails when nobody else is there, or when
// its previous cut got no further than the one before it: then waiting for the others has not
// helped, and restarting again would loop.
//
// Not thread-safe: the executor serializes calls (the runtime under one mutex; the simulator is
// single-threaded). Grants are queued, not delivered by callback, so that an executor reacting
// to one (a build that fails, a departure) may call the driver again without reentrancy.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/policy_capabilities.hpp"

namespace tandem::schedule {

/// Where the driver reads the time (seconds since the workload began): the wall clock or the
/// simulator's virtual clock.
class driver_clock {
 public:
  virtual ~driver_clock() = default;
  [[nodiscard]] virtual double now() const = 0;
};

/// What a running iteration whose region borrow was refused should do (judge_memory_wait).
enum class memory_wait_verdict {
  keep_waiting,       ///< another iteration will return regions, or a budget change is to come
  restart_iteration,  ///< let go: cut the iteration short, return its regions, start it again
  make_room,          ///< free some of its own memory (its pressure relief), then ask again
  give_up,            ///< fail as out of memory: nothing will change
};

struct grant {
  job_id job = 0;
  std::size_t group = 0;  ///< 0: the iteration's start; k >= 1: group k of it
  double waited_s = 0;    ///< since the job asked
  /// When the start follows another job's iteration end or departure (the first start after
  /// it): that event's time, so that the executor can measure the job switch on its side.
  std::optional<double> switch_from_s;
  /// For an iteration's start: the footprint variant it runs (chooses_footprint.hpp); 0, the
  /// plain iteration, under a policy that does not choose.
  std::size_t variant = 0;
};

class policy_driver {
 public:
  using limit_sink = std::function<void(job_id, std::optional<std::size_t>)>;
  using budget_sink = std::function<void(std::size_t)>;
  struct budget_change {
    double at_s = 0;
    std::size_t bytes = 0;
  };

  /// `expected_jobs`: how many arrivals will come, so that a policy waiting for a later arrival
  /// is not taken for a stalled one. `limits` may be empty when no executor needs them.
  policy_driver(policy& policy, const driver_clock& clock, std::size_t expected_jobs,
                limit_sink limits = {});

  /// The workload's timed budget changes (any order; equal times keep their order), and where
  /// each new budget goes before the policy hears of it.
  void set_budget_schedule(std::vector<budget_change> changes, budget_sink sink);
  /// When the next scheduled change is due; empty when none is left.
  [[nodiscard]] std::optional<double> next_budget_change() const;
  /// Applies every scheduled change due by now, in order; returns them (with the time applied).
  std::vector<budget_change> apply_due_budget_changes();

  /// The policy's optional capabilities, found once when the driver was made: executors read
  /// them here rather than casting again.
  [[nodiscard]] const policy_capabilities& capabilities() const { return capabilities_; }
  [[nodiscard]] double now() const { return clock_.now(); }

  void arrive(const job_info& job);
  /// The job leaves (finished, failed, stopped); a wait of its is withdrawn. Idempotent.
  void depart(job_id job);
  void change_budget(std::size_t bytes);
  /// The ways `job` can run its iterations (chooses_footprint.hpp), for a policy that chooses
  /// among them; an event, since a smaller variant may let a waiting job start. Ignored by a
  /// policy without the capability.
  void offer_variants(job_id job, std::vector<footprint_variant> variants);

  /// The job wants to start its next iteration (or its first: the first grant builds it).
  void request_start(job_id job);
  /// The job finished group `group - 1` of its iteration and wants to enter group `group`.
  /// `restartable`: whether it can let go of its iteration at this boundary (the runtime's
  /// cannot past its backward pass, where the optimizer step may have changed weights already).
  void request_group(job_id job, std::size_t group, bool restartable);
  void finish_iteration(job_id job, const iteration_report& report);
  /// A job that stops waiting without a grant (a stop request): it asks nothing more.
  void withdraw(job_id job);

  /// Asks again the jobs whose wait-until time has come.
  void wake_due();
  /// The earliest wait-until time of any waiting job; empty when none waits for a time.
  [[nodiscard]] std::optional<double> next_wake() const;
  /// The wait-until time of `job`, when it waits for one.
  [[nodiscard]] std::optional<double> wake_time(job_id job) const;

  /// After a region borrow of running `job` was refused: whether it should wait and ask again
  /// (it counts as waiting for regions until memory_wait_ended), restart its iteration (it
  /// owes a restart_iteration), or fail as out of memory (see above); after either of the last
  /// two the others wait for its regions until it restarts or departs. `restartable`: whether
  /// its executor can restart the iteration here.
  /// `refused_bytes`: the borrow refused, which a restarted iteration's report ends with.
  /// `free_in_own_regions`: what the job's own regions hold unused, in pieces too small for it.
  /// `can_make_room`: whether it may free some of its own memory instead (make_room, answered
  /// in place of any restart or failure; it asks again with false if that did not serve).
  /// `falls_back`: a give_up does not fail it (another class's free block serves): it only
  /// ends the wait, and the others are not told to wait for its regions.
  [[nodiscard]] memory_wait_verdict memory_wait(job_id job, bool restartable,
                                                std::size_t refused_bytes = 0,
                                                std::size_t free_in_own_regions = 0,
                                                bool can_make_room = false,
                                                bool falls_back = false);
  void memory_wait_ended(job_id job);
  /// Seconds `job` has spent waiting for regions so far, the wait under way included: from a
  /// refused borrow's keep_waiting verdict to memory_wait_ended (or the restart, failure or
  /// iteration end that ended it). An iteration's waits are the difference across it.
  [[nodiscard]] double memory_waited_s(job_id job) const;
  /// What running `job` is held up by, for people watching a run (progress lines): waiting
  /// for regions (since when), at a group boundary, or letting go of its iteration; empty when
  /// it is not held up, or not running.
  [[nodiscard]] std::string held_up_by(job_id job) const;
  /// `job` let go of its iteration (a restart_iteration verdict): the iteration ends as
  /// restarted (an event; `report` measured up to the cut, with restarted set) and the job asks
  /// to start it again with request_start.
  void restart_iteration(job_id job, iteration_report report);
  /// Whether `job` was told to restart its iteration (a restart_iteration verdict, or
  /// owe_restart) and has not reported the restart, nor left.
  [[nodiscard]] bool restart_owed(job_id job) const;
  /// Whether `job` lets go of its iteration: it owes a restart, or it was told to give up and
  /// has not left yet (its failure may surface only later, where libtorch swallowed it).
  [[nodiscard]] bool lets_go(job_id job) const { return letting_go_.contains(job); }
  /// Makes running `job` owe a restart as if a memory wait had been judged so (an injected
  /// fault); the others wait for its regions meanwhile, as after that verdict.
  void owe_restart(job_id job);

  /// Grants given since the last call, in the order given.
  [[nodiscard]] std::vector<grant> take_grants();
  /// Running jobs told since the last call to let go of their iteration while they wait at a
  /// group boundary (see Memory waits): each owes a restart (restart_owed), and its executor
  /// withdraws its group request and restarts the iteration there.
  [[nodiscard]] std::vector<job_id> take_boundary_restarts();
  [[nodiscard]] bool has_grants() const { return !grants_.empty(); }

  [[nodiscard]] bool present(job_id job) const { return present_.contains(job); }
  [[nodiscard]] bool stalled() const;
  /// What to tell the stalled jobs; `name_of` names a job.
  [[nodiscard]] std::string stall_message(const std::function<std::string(job_id)>& name_of) const;

 private:
  struct wait {
    std::size_t group = 0;
    std::uint64_t order = 0;  // when it began to wait, for the asking order
    double asked_s = 0;
    std::optional<double> until_s;  // set: a wait-until verdict; empty: waits for an event
    bool restartable = false;       // at a group boundary: whether it can let go there
  };
  /// An event: every waiting job asks again, in order, until a pass grants nobody (a grant is
  /// an event too). `switch_from`: the job whose iteration end or departure this is.
  void event(std::optional<job_id> switch_from = std::nullopt);
  /// Asks `job`; true when it was granted. `after_event`: asked again because of an event
  /// (a start then may be a job switch), not on its own request.
  bool ask(job_id job, bool after_event);
  void ask_in_order(const std::function<bool(const wait&)>& which);
  void apply_limits();

  policy& policy_;
  const driver_clock& clock_;
  const std::size_t expected_jobs_;
  limit_sink limits_;
  const policy_capabilities capabilities_;  // the policy's optional ones, found once

  std::vector<budget_change> schedule_;  // in time order
  std::size_t next_change_ = 0;
  budget_sink budget_sink_;

  std::set<job_id> running_;  // granted an iteration start, not yet ended or departed
  struct memory_waiter {
    std::uint64_t order = 0;  // when it began, for choosing the one that lets go
    bool restartable = false;
    double since_s = 0;
  };
  /// `job` waits for regions no more: its wait's time is counted.
  void end_memory_wait(job_id job);
  /// The verdict for a refused borrow, and the job at a group boundary that lets go for it
  /// when that is the choice (the verdict is then keep_waiting).
  struct memory_judgement {
    memory_judgement(memory_wait_verdict verdict_,
                     std::optional<job_id> lets_go_at_boundary_ = std::nullopt)
        : verdict(verdict_), lets_go_at_boundary(lets_go_at_boundary_) {}
    memory_wait_verdict verdict;
    std::optional<job_id> lets_go_at_boundary;
  };
  [[nodiscard]] memory_judgement judge_memory_wait(job_id job, bool restartable, bool fragmented,
                                                   bool can_make_room) const;
  [[nodiscard]] bool others_running(job_id job) const;
  void forget_alone_restarts(job_id job);
  /// The running iteration that lets go when every running one waits: the latest to wait
  /// for regions that can restart (`asking`, with `restartable`, among them), else the latest
  /// waiting at a group boundary, else the latest to wait for regions.
  [[nodiscard]] job_id iteration_to_let_go(job_id asking, bool restartable) const;

  std::map<job_id, memory_waiter> memory_waits_;  // waiting for regions
  std::map<job_id, double> memory_waited_s_;      // waits ended, by job
  // Told to restart or give up, not yet restarted or gone: the borrow it was refused, and
  // which of the two.
  struct letting_go {
    std::size_t refused_bytes = 0;
    bool restarts = false;
  };
  std::map<job_id, letting_go> letting_go_;
  std::vector<job_id> boundary_restarts_;  // told to let go at a group boundary, not yet taken
  // Restarted while running alone, since its last whole iteration: how far its latest cut got
  // (its report's peak), and whether that was no further than the one before (then the next
  // time it waits alone fails: it makes no progress).
  std::set<job_id> restarting_alone_;
  std::map<job_id, std::size_t> alone_cut_peak_;
  std::set<job_id> alone_restarts_spent_;
  std::uint64_t next_memory_wait_ = 0;

  std::size_t arrived_ = 0;
  std::set<job_id> present_;
  std::map<job_id, wait> waiting_;
  std::uint64_t next_order_ = 0;
  std::deque<grant> grants_;
  bool asking_ = false;  // inside a pass: an event raised by a grant is folded into it

  // The latest iteration end or departure, for job-switch measurement: the first start of
  // another job after it.
  struct switch_mark {
    job_id from = 0;
    double at_s = 0;
    bool counted = false;
  };
  std::optional<switch_mark> switch_;
};

}  // namespace tandem::schedule
