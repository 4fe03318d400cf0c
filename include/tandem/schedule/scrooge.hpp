#pragma once
// Zico's scrooge scheduler (Zico §5): jobs share the budget by starting their iterations at
// moments when the predicted usage of all jobs together stays within it, delaying an iteration
// by the smallest TimeShift that achieves this (time_shift.hpp).
//
// Phases of a job:
// - profiling: its first iteration runs alone (nobody else starts meanwhile, and it starts only
//   when nobody else is mid-iteration), which gives its region lifespans solo (§5.3);
// - informed: before every iteration, the TimeShift over the others' predicted remaining curves
//   decides start now, wait until now + TimeShift, or wait for an event when no delay works
//   before the others' iterations end. Every iteration's measured curve replaces the job's
//   profile (feedback), so lifespans measured beside the others, slowdowns included, predict
//   the next iteration.
// - fallback: when an iteration takes more regions than its prediction (by more than the
//   threshold at its peak, or beyond its claim at any step: the beefy-plus-lean case of §5.3),
//   the job runs time-multiplexed, alone, until one of its iterations matches again.
// The budget is a hard guarantee whatever the timing: scrooge is also a borrow_arbiter. Each
// region borrow of a running iteration is granted only when every running iteration can still
// reach its predicted claim in some order (iteration_claims.hpp); otherwise the job waits,
// mid-iteration, for the others' returns. An iteration starts only into such a state too. So a
// TimeShift that was too short costs a wait at a borrow, never a failed job.
// Budget ramp: the TimeShift plans with a lowered budget at first (ramp_start x budget), raised
// to the real one over ramp_iterations informed iterations (§5.3), so that early, still-unsettled
// lifespans are not trusted with the whole budget; the borrow checks always use the real one.
// Progress: a job that nobody else's iteration is blocking starts if it fits the real budget
// beside the others' idle holdings, whatever the ramp; a job that cannot fit even alone is
// refused with a config_error naming the numbers.
// Footprint variants (chooses_footprint.hpp; `[policy] planner = ...`): when the executor offers
// a job's iteration under plans that lower its peak, every informed start weighs each variant:
// its TimeShift (or, when no delay works, the time until the running iterations end) plus its
// predicted extra time over the plain iteration; the least wins, the plain one on a tie. So a
// job that would wait for another's iteration runs beside it under a plan when the plan costs
// less than the wait, iteration by iteration. Each variant keeps its own curve (predicted, then
// measured by feedback) for the TimeShift and the claims, so the budget stays hard; a plan's first
// iteration runs alone, as a profiling iteration does, since its curve is only predicted until
// then and a claim from a curve it outgrows could leave two iterations waiting for each other
// (a plan never run that would be the best waits for the running iterations to end, as a job
// waiting to profile does, and runs alone once). An iteration
// that runs alone (profiling, fallback) runs the first variant that fits beside the others'
// holdings, so a job whose plain iteration cannot fit the budget at all runs planned instead of
// being refused.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tandem/schedule/borrow_arbiter.hpp"
#include "tandem/schedule/chooses_footprint.hpp"
#include "tandem/schedule/iteration_claims.hpp"
#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/policy_entry.hpp"
#include "tandem/schedule/policy_options.hpp"
#include "tandem/schedule/reports_statistics.hpp"
#include "tandem/schedule/time_shift.hpp"

namespace tandem::schedule {

struct scrooge_options {
  double ramp_start = 0.8;            ///< fraction of the budget predictions start with, (0, 1]
  std::int64_t ramp_iterations = 10;  ///< informed iterations to reach the whole budget (0: none)
  double fallback_threshold = 0.25;   ///< relative miss of the peak that triggers fallback
  /// Borrows of margin in every iteration claim (iteration_claims.hpp): a measured curve
  /// predicts the next iteration only to within a borrow or so. 0: claims as exact as the curve.
  std::int64_t claim_margin = 1;
  /// 1: with footprint plans offered, a wait costs the share of the device it leaves idle, as
  /// measured (free_share), and a start's price includes the delay it adds to the job next in
  /// line (weigh_the_next_in_line), by the same share. 0: each start prices its own delay and
  /// extra time only.
  std::int64_t weigh_waiting = 0;

  /// These fields as options by name (workload files, --set): ranges, defaults, help.
  [[nodiscard]] static const option_table<scrooge_options>& table();
};

struct scrooge_job_stats {
  std::int64_t iterations = 0;
  std::int64_t delayed = 0;        ///< iterations that got a TimeShift > 0
  double total_shift_s = 0;        ///< seconds its starts were delayed by TimeShift verdicts
  std::int64_t fallbacks = 0;      ///< times the job fell back to time multiplexing
  std::int64_t event_waits = 0;    ///< decisions to wait for another job's iteration end
  std::int64_t shared_starts = 0;  ///< iterations started while another job's was running
  std::int64_t borrow_waits = 0;   ///< waits for region borrows refused mid-iteration
  std::int64_t plans = 0;          ///< footprint plans offered (variants beyond the plain one)
  std::int64_t planned = 0;        ///< iterations run under a footprint plan (a variant > 0)
  double plan_extra_s = 0;         ///< their predicted extra time over plain iterations
  /// How much longer its iterations run while another's runs beside them (1: not at all), as
  /// measured; 0 until an iteration has run mostly beside another.
  double stretch = 0;
};

class scrooge_policy final : public policy,
                             public borrow_arbiter,
                             public reports_statistics,
                             public chooses_footprint {
 public:
  scrooge_policy(std::size_t budget_bytes, scrooge_options options = {});

  [[nodiscard]] std::string_view name() const override { return "scrooge"; }
  void on_arrival(const job_info& job, double now_s) override;
  void on_departure(job_id job, double now_s) override;
  void on_iteration_start(job_id job, double now_s) override;
  void on_iteration_end(job_id job, const iteration_report& report, double now_s) override;
  void on_budget_change(std::size_t budget_bytes, double now_s) override;
  [[nodiscard]] decision may_start(job_id job, double now_s) override;

  // borrow_arbiter: callable from any thread (under the claims' own lock).
  [[nodiscard]] bool try_reserve(job_id job, std::size_t bytes) override;
  void cancel(job_id job, std::size_t bytes) override;
  void returned(job_id job, std::size_t bytes) override;
  [[nodiscard]] bool others_will_move(job_id job) override;

  // chooses_footprint
  void offer_variants(job_id job, std::vector<footprint_variant> variants) override;
  [[nodiscard]] std::size_t chosen_variant(job_id job) const override;

  // reports_statistics
  [[nodiscard]] std::vector<policy_statistic> job_statistics(job_id job) const override;
  [[nodiscard]] std::vector<policy_statistic> system_statistics() const override;

  /// Also answers for a job that departed.
  [[nodiscard]] scrooge_job_stats stats(job_id job) const;
  /// The budget predictions use now (the ramp's current value).
  [[nodiscard]] std::size_t effective_budget() const;

 private:
  enum class phase { profiling, informed, fallback };
  struct job_state {
    std::string name;
    phase now = phase::profiling;
    std::shared_ptr<const indexed_curve> profile;  // the latest measured iteration
    // Offered footprint variants (0: plain): each one's curve, predicted until an iteration of
    // it is measured, and its predicted length alone. Empty: never offered.
    std::vector<std::shared_ptr<const indexed_curve>> variants;
    std::vector<double> variant_s;
    // As offered; variant_s[k] is raised to a measured length while variant k swaps on demand.
    std::vector<double> offered_s;
    // The least an iteration of it needs, from one that had to restart (the whole budget after
    // a restart that got no further): until it runs whole, it starts alone only when that fits
    // beside what the others hold between iterations.
    std::size_t restart_need = 0;
    std::vector<bool> measured;       // by variant: an iteration of it has been measured
    bool trial = false;               // the iteration under way is its variant's first: alone
    std::size_t trial_wanted = 0;     // a plan never run that was the best: it runs alone next
    std::size_t chosen = 0;           // the variant of the latest start verdict
    std::size_t running_variant = 0;  // the variant of the iteration under way
    bool running = false;
    bool admitted = false;  // has started an iteration: built, holding its persistent memory
    double started_s = 0;
    bool asked_while_blocked = false;      // this iteration was delayed by a verdict
    std::optional<double> first_ask_s;     // when this iteration first asked
    std::optional<double> shifted_from_s;  // when its first TimeShift verdict came
    // By variant: the length of its latest iteration that ran with no other beside it (the
    // offered length until one has).
    std::vector<double> alone_s;
    double beside_s = 0;  // of the iteration under way, the time another's iteration ran too
    scrooge_job_stats stats;
  };

  /// Its iterations run alone: profiling, a fallback after a missed prediction, or no profile.
  [[nodiscard]] static bool runs_alone(const job_state& state);
  [[nodiscard]] bool anyone_running_except(job_id job) const;
  [[nodiscard]] bool someone_runs_alone() const;
  /// Admission of a job not yet built (its first iteration builds it and has an unknown peak),
  /// by the shared rule (admission.hpp) over what the others hold between iterations: so that
  /// resident jobs' persistent memory does not crowd out a newcomer mid-iteration (or it them).
  [[nodiscard]] bool admits(job_id job) const;
  /// Whether `job` has asked to run an iteration alone (profiling or fallback) and will once the
  /// running iterations end: an informed job must not start before it, or it could starve.
  [[nodiscard]] bool waits_to_run_alone(job_id job, const job_state& state) const;
  /// Whether an informed, built job is between iterations: it has asked to start and waits (for
  /// a delay or an event), or is about to ask (its iteration just ended).
  [[nodiscard]] static bool waits_beside(const job_state& state);
  /// Of the others in others_ids_, the index of the waiting job that has waited longest.
  [[nodiscard]] std::optional<std::size_t> next_in_line() const;
  /// The delay plus extra time the waiting job at others_ids_[waiting_at] is predicted to pay,
  /// choosing its best variant, if `job` runs `curve` from `start_s` (none: stays idle).
  [[nodiscard]] double waiting_cost(std::size_t waiting_at, job_id job, const indexed_curve* curve,
                                    double start_s, double now_s, double running_end_s);
  /// The share of the device's work that running the two side by side adds over one at a time:
  /// 1/stretch of each, less 1, in [0, 1] (1 while either stretch is unmeasured, as Zico's
  /// TimeShift assumes). Processor sharing of two jobs that each fill the device gives 0.
  [[nodiscard]] static double free_share(const job_state& one, const job_state& other);
  /// The least free_share of `job` with a job mid-iteration (1 with none): what a wait for
  /// their iterations leaves of the device idle.
  [[nodiscard]] double share_beside_running(job_id job, const job_state& state) const;
  /// Adds the time since the latest start or end to beside_s of every job whose iteration ran
  /// beside another's meanwhile.
  void count_time_beside(double now_s);
  /// After an iteration of variant `k` that took `length_s`: its length alone, or the stretch
  /// its time beside others implies against that length alone.
  static void learn_stretch(job_state& state, std::size_t k, double length_s);
  /// The variant to start, given the cheapest start for `job` alone (`best`, `best_shift`,
  /// `best_cost`, its waits priced at `wait_share`), once the delay each start adds to the job
  /// next in line is counted too; `best_shift` follows the variant. others_, others_ids_ and
  /// shifts_ must be the decision's.
  [[nodiscard]] std::size_t weigh_the_next_in_line(job_id job, const job_state& state, double now_s,
                                                   double running_end_s, std::size_t best,
                                                   std::optional<double>& best_shift,
                                                   double best_cost, double wait_share);
  /// Whether `job`'s iteration alone fits beside what every other job holds between
  /// iterations, as far as it is known (always, with nobody else present or no need known).
  [[nodiscard]] bool fits_beside_idle_others(job_id job, const job_state& state) const;
  /// What `job` holds between iterations; the claims' lock must be held.
  [[nodiscard]] std::size_t idle_held(job_id job, const job_state& state) const;
  /// What every job but `left_out` holds between iterations; the claims' lock must be held.
  [[nodiscard]] std::size_t idle_held_except(job_id left_out) const;
  /// Whether `job`, between iterations and not held back by a restart, would be let start with
  /// nobody running: its least iteration fits beside what all the others hold idle, under the
  /// largest budget so far. The claims' lock must be held.
  [[nodiscard]] bool could_start_alone(job_id job, const job_state& state) const;
  /// Counts a wait for another job's iteration end and says so.
  [[nodiscard]] static decision wait_for_event(job_state& state);
  /// The informed decision: the iteration claims' admission, then the TimeShift, for each
  /// variant; the least delay plus extra time wins.
  [[nodiscard]] decision decide_by_time_shift(job_id job, job_state& state, double now_s);
  /// The TimeShift of `job` running `curve`: a delay (0: now), or none when no delay works
  /// before the running iterations end (the claims' admission included).
  [[nodiscard]] std::optional<double> shift_for(job_id job, const indexed_curve& curve,
                                                double now_s);
  /// The curve that predicts `job` running variant `k`: the measured plain profile for 0 when
  /// there is one, else the variant's own.
  [[nodiscard]] static const std::shared_ptr<const indexed_curve>& curve_of(const job_state& state,
                                                                            std::size_t k);
  /// For an iteration that runs alone: the first variant whose peak fits beside what the others
  /// hold between iterations (the last when none does).
  [[nodiscard]] std::size_t variant_alone(job_id job, const job_state& state) const;
  /// Variant `k`'s predicted extra time over the plain iteration (0 for the plain one).
  [[nodiscard]] static double extra_s(const job_state& state, std::size_t k);
  /// The least peak among the job's variants (its plain profile's without any).
  [[nodiscard]] static std::size_t least_peak(const job_state& state);
  [[nodiscard]] bool missed_prediction(const usage_curve& predicted,
                                       const usage_curve& observed) const;

  std::size_t budget_;
  std::size_t largest_budget_;  // a peak above it can never run; above budget_ alone, it waits
  scrooge_options options_;
  std::int64_t informed_iterations_ = 0;  // for the ramp
  std::map<job_id, job_state> jobs_;
  std::map<job_id, scrooge_job_stats> departed_;  // so that results can report them
  time_shift_solver solver_;
  std::vector<other_job> others_;   // reused by may_start
  std::vector<job_id> others_ids_;  // whose entry each of others_ is
  // The TimeShift of each variant the latest decision tried, in order (none: no start before an
  // iteration ends, or not a candidate); weigh_the_next_in_line tries only the rest.
  std::vector<std::optional<double>> shifts_;
  std::vector<other_job> beside_;  // a waiting job's others, the deciding one included
  double last_event_s_ = 0;        // the latest iteration start or end (count_time_beside)
  // Borrows arrive from any thread; everything else is serialized by the driver.
  mutable std::mutex claims_mutex_;
  iteration_claims claims_;  // guarded by claims_mutex_
  struct borrow_record {
    std::int64_t waits = 0;  // refused borrows the job waited for, each wait once
    bool refused = false;    // its last borrow was refused: it is waiting (and asks again)
  };
  std::map<job_id, borrow_record> borrows_;  // guarded by claims_mutex_
};

/// scrooge in the registry (registry.hpp).
[[nodiscard]] policy_entry scrooge_entry();

}  // namespace tandem::schedule
