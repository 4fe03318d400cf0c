#pragma once
// Waterwave's NodeGroup pipeline as a policy (Waterwave §4.3-§4.4): every job's iteration is cut
// into node groups (node_groups.hpp), and the jobs advance group by group in steps separated by a
// counter_barrier; at each barrier the next step is chosen by the pairing rule (pairing.hpp) from
// what every job holds then, so one job's allocating groups run beside another's freeing groups
// and memory freed in one step serves the next step's allocations.
//
// Phases of a job:
// - profiling: its first `profile_iterations` iterations run alone, whole (nobody starts a new
//   iteration meanwhile; jobs mid-iteration finish theirs first), as Waterwave profiles each job
//   solo before sharing. The last of them is partitioned.
// - calibration: one more solo iteration, gated at its group boundaries, measures what each
//   group costs in regions when the memory freed before it has been handed back at the barrier
//   (a group then borrows regions a solo run would have kept). Measured alone, without it, the
//   first shared iteration ran out of memory (two ResNet-20s, budget 157 MiB).
// - pipelined: at each group boundary the job waits at the barrier; when the step's other
//   members have arrived, the next step is chosen and the job goes on if it is in it. Each
//   iteration's measured groups feed back: a group that needs more regions than planned is
//   planned with the larger rise at once; a smaller rise only halves the excess per iteration,
//   so a group is planned large for a while after it grew, without one unusual iteration
//   inflating it for good. An iteration whose allocation sequence changed (a different count)
//   is partitioned again and calibrated again.
// A driver without memory events (iteration_report::memory empty) gets one group per iteration,
// planned from the regions held: pairing at iteration granularity.
// Fallback: a job whose planned iteration cannot fit beside the others' holdings even when they
// are all between iterations, but whose largest measured holding would, runs its iteration
// alone, as in profiling (Zico's fallback to time multiplexing); pairing could never choose it,
// and it would starve (BERT beside GNMT on the simulated 2080 Ti: 5 GNMT iterations in 60 s
// before this rule). One that would not fit even so waits for others to leave.
// Footprint plans (chooses_footprint.hpp; `[policy] planner = ...`): where a job's plain
// iteration cannot go on (a pipelined job's cannot fit beside the others' idle holdings, so it
// would run alone, as the fallback above, or wait for others to leave; a newcomer's cannot be
// admitted), it may run its iteration under a plan instead: a plan whose predicted rise fits
// beside them (which one: below), chosen when its extra time is less than what running alone
// costs the others (a plain iteration each), or whenever running alone cannot fit either; and
// whenever it is quicker than the plain iteration, which costs what it took where it swapped on
// demand (as under scrooge) until one runs without. Each plan has
// groups of its own, learned as the plain iteration's are: its first run is chosen by the
// pairing rule as one group and runs beside the pipeline (outside its steps, so the others'
// groups go on) with the regions its plan predicts at its peak reserved until it ends, and is
// cut into groups; its second runs the same way, gated at those groups' boundaries without
// waiting, and calibrates them; from its third on it steps through the pipeline like a plain
// iteration, so its peak meets the others' freeing groups instead of a reservation of its own.
// A planned iteration is never learned into the plain iteration's groups. Of the plans that fit,
// the cheapest runs while the others are between iterations (taking turns with them); a dearer
// one within the job's share of the room above every job's holding (what the others' latest
// iterations left of it, or an equal part) runs beside their peaks, and is chosen where its
// extra time is below a plain iteration per other job, until one of its iterations took longer
// than the jobs' iterations one after the other would.
// Admission: a job not yet built starts (alone) only while the others' holdings leave room for
// the largest peak among them (admission.hpp, shared with scrooge); meanwhile it holds nobody up.
// Without it, on the simulator's 100-job trace, newcomers' solo iterations ran out of memory beside
// the resident jobs' holdings (5 of 100 failed). Progress: when the barrier is open, nobody runs
// and no ready job's group fits, the pipeline's leader goes on alone (counted as a forced step):
// waiting could not free anything, and the pool's budget still holds (an allocation it cannot meet
// fails the job, not the budget).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "tandem/schedule/chooses_footprint.hpp"
#include "tandem/schedule/counter_barrier.hpp"
#include "tandem/schedule/group_gating.hpp"
#include "tandem/schedule/node_groups.hpp"
#include "tandem/schedule/pairing.hpp"
#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/policy_entry.hpp"
#include "tandem/schedule/policy_options.hpp"
#include "tandem/schedule/reads_progress.hpp"
#include "tandem/schedule/reports_statistics.hpp"

namespace tandem::schedule {

struct nodegroup_options {
  std::size_t split_bytes = 0;       ///< net bytes per group; 0: chosen per job (node_groups.hpp)
  std::size_t groups_per_phase = 4;  ///< for the automatic split
  std::size_t streams = 2;           ///< groups that run at once in a step (Waterwave: 2)
  std::int64_t profile_iterations = 2;  ///< solo iterations before partitioning (>= 1)

  /// These fields as options by name (workload files, --set): ranges, defaults, help.
  [[nodiscard]] static const option_table<nodegroup_options>& table();
};

struct nodegroup_job_stats {
  std::int64_t iterations = 0;
  std::int64_t solo_iterations = 0;  ///< profiling and calibration iterations, alone
  std::size_t groups = 0;            ///< node groups per iteration (0 before partitioning)
  std::size_t allocating_groups = 0;
  std::size_t split_bytes = 0;
  std::int64_t groups_run = 0;        ///< group entries granted (iteration starts included)
  std::int64_t repartitions = 0;      ///< iterations whose allocation sequence changed
  std::int64_t solo_fallbacks = 0;    ///< plain iterations run alone: its groups did not fit
  double barrier_wait_s = 0;          ///< time spent ready at a boundary before its step
  std::int64_t plans = 0;             ///< footprint plans offered (variants beyond the plain one)
  std::int64_t planned = 0;           ///< iterations run under a footprint plan
  std::int64_t planned_in_steps = 0;  ///< of them, those that stepped through the pipeline
  double plan_extra_s = 0;            ///< their predicted extra time over plain iterations
};

class nodegroup_policy final : public policy,
                               public group_gating,
                               public reads_progress,
                               public reports_statistics,
                               public chooses_footprint {
 public:
  nodegroup_policy(std::size_t budget_bytes, nodegroup_options options = {});

  [[nodiscard]] std::string_view name() const override { return "nodegroup"; }
  void on_arrival(const job_info& job, double now_s) override;
  void on_departure(job_id job, double now_s) override;
  void on_iteration_start(job_id job, double now_s) override;
  void on_iteration_end(job_id job, const iteration_report& report, double now_s) override;
  void on_budget_change(std::size_t budget_bytes, double now_s) override;
  [[nodiscard]] decision may_start(job_id job, double now_s) override;

  // reads_progress
  void set_progress_source(const progress_source* source) override { progress_ = source; }

  // group_gating
  [[nodiscard]] bool wants_memory_events() const override { return true; }
  [[nodiscard]] std::vector<std::size_t> group_boundaries(job_id job) const override;
  void on_group_end(job_id job, std::size_t group, double now_s) override;
  [[nodiscard]] decision may_enter_group(job_id job, std::size_t group, double now_s) override;
  void on_group_start(job_id job, std::size_t group, double now_s) override;

  // reports_statistics
  [[nodiscard]] std::vector<policy_statistic> job_statistics(job_id job) const override;
  [[nodiscard]] std::vector<policy_statistic> system_statistics() const override;

  // chooses_footprint
  void offer_variants(job_id job, std::vector<footprint_variant> variants) override;
  [[nodiscard]] std::size_t chosen_variant(job_id job) const override;

  /// Also answers for a job that departed.
  [[nodiscard]] nodegroup_job_stats stats(job_id job) const;
  /// The job's current partition (empty before it is partitioned or after it left).
  [[nodiscard]] std::optional<iteration_partition> partition_of(job_id job) const;
  /// What each of the job's groups is planned to cost (learned; empty before partitioning).
  [[nodiscard]] std::vector<group_need> planned_needs(job_id job) const;
  /// Steps opened so far, and steps in which the leader went on alone because nothing fit.
  [[nodiscard]] std::size_t steps() const { return barrier_.steps(); }
  [[nodiscard]] std::size_t forced_steps() const { return forced_steps_; }

 private:
  /// An offered variant as the policy weighs it, read once from its curve.
  struct offered_plan {
    std::size_t start = 0;  ///< regions held as its iteration starts
    std::size_t peak = 0;   ///< the most held during it
    std::int64_t net = 0;   ///< held at its end less `start`
    double seconds = 0;     ///< its iteration alone
    double cost_s = 0;      ///< what it costs: `seconds`, or what it took swapping on demand
  };

  /// One way of running the job's iteration (plain, or a plan) cut into node groups.
  struct learned_groups {
    std::optional<iteration_partition> partition;
    std::vector<group_need> needs;  ///< per group, learned
    bool calibrated = false;        ///< its needs were measured gated: pipelining may begin
    double measured_s = 0;  ///< a plan's latest iteration took, waits included (0: none yet)
    [[nodiscard]] bool pipelined() const { return calibrated && !needs.empty(); }
  };

  struct job_state {
    job_info info;
    std::size_t arrival_rank = 0;
    std::size_t turn = 0;  ///< when it last began an iteration, counted in iteration starts
    /// Per variant offered (0: the plain iteration); always at least the plain one.
    std::vector<learned_groups> learned = std::vector<learned_groups>(1);
    std::size_t next_group = 0;  ///< the group it runs next (0: the iteration's start)
    bool ready = true;           ///< waiting at the boundary of next_group
    bool granted = false;        ///< in the current step, not yet entered
    bool running = false;        ///< in the current step
    bool solo = false;           ///< the current step is its profiling iteration
    double ready_since_s = 0;
    std::vector<std::size_t> entered_held;  ///< this iteration: regions held entering each group
    std::size_t idle_held = 0;              ///< regions held at its last iteration's end
    std::size_t peak_held = 0;              ///< the most regions held in any of its iterations
    bool built = false;                  ///< granted an iteration at least once (holds its state)
    std::vector<offered_plan> variants;  ///< offered (0: plain); empty: plain only
    std::size_t chosen = 0;              ///< the variant of its latest iteration grant
    std::size_t running_variant = 0;     ///< the variant of the iteration under way
    bool beside = false;                 ///< a planned iteration under way, beside the pipeline
    std::size_t reserved = 0;            ///< what it may hold until then: its plan's peak
    std::int64_t offers = 0;             ///< offer_variants calls: a plan run across one is stale
    std::int64_t offers_at_start = 0;    ///< offers when the iteration under way began
    std::size_t last_rise = 0;  ///< what its latest iteration was to need above its holding
    /// The least an iteration of it needs, from one that had to restart (the whole budget after
    /// a restart that got no further); 0 once an iteration runs whole.
    std::size_t restart_need = 0;
    nodegroup_job_stats stats;
  };

  /// Its plain iteration steps through the pipeline.
  [[nodiscard]] static bool pipelined(const job_state& job);
  /// The groups the job steps through from its next boundary: mid-iteration, those of the
  /// variant under way; at its start, the plain iteration's. Null where it would not step.
  [[nodiscard]] static const learned_groups* stepping(const job_state& job);
  void arrive_at_barrier(job_id job, double now_s);
  /// Learns `groups` from an iteration run that way; `plain` keeps the job's statistics.
  void learn(job_state& job, learned_groups& groups, const iteration_report& report, bool plain);
  /// A pipelined job whose planned iteration cannot fit beside the others' idle holdings, but
  /// whose largest measured holding would: it runs alone rather than starve.
  [[nodiscard]] bool needs_solo_fallback(job_id id, const job_state& job) const;
  /// A planned iteration as one group: its rise over what the job holds as it starts and what
  /// it holds more (or less) at its end; for a job not built yet, from nothing.
  [[nodiscard]] static group_need as_one_group(const offered_plan& plan, bool built);
  /// A pipelined job at its iteration's start whose plain iteration cannot fit beside the
  /// others' idle holdings: the plan it runs instead (0: none fits, or running alone is cheaper).
  /// Where none fits but the plain iteration was measured slower than a plan (it swapped on
  /// demand), the plan short of least, which then runs alone.
  [[nodiscard]] std::size_t plan_instead(job_id id, const job_state& job) const;
  /// Its plain iteration fits beside the others' idle holdings: a pipelined job's groups, one
  /// not pipelined yet as predicted (and, never built, admitted).
  [[nodiscard]] bool plain_fits_beside_idle(job_id id, const job_state& job) const;
  /// Plan `variant` fits beside the others' idle holdings.
  [[nodiscard]] bool plan_fits_beside_idle(job_id id, const job_state& job,
                                           std::size_t variant) const;
  /// What a plan of the job needs above what it holds as its iteration starts.
  [[nodiscard]] static std::size_t plan_need(const job_state& job, std::size_t variant);
  /// What the others hold between their iterations.
  [[nodiscard]] std::size_t others_idle(job_id id) const;
  /// A job whose iteration restarted, needing more than fits beside what the others hold
  /// between iterations, while another goes on (and will leave): it waits, as under scrooge,
  /// rather than start again into the same shortage and give up.
  [[nodiscard]] bool held_back(job_id id, const job_state& job) const;
  /// May a job that was never granted be built now?
  [[nodiscard]] bool admits(job_id newcomer) const;
  /// When the barrier is open: choose the next step and grant it.
  void next_step(double now_s);
  [[nodiscard]] decision answer(job_id job, std::size_t group, double now_s);
  [[nodiscard]] std::size_t held_by(job_id job, const job_state& state) const;

  std::size_t budget_;
  nodegroup_options options_;
  const progress_source* progress_ = nullptr;
  std::map<job_id, job_state> jobs_;
  std::map<job_id, nodegroup_job_stats> departed_;
  counter_barrier barrier_;
  std::size_t arrivals_ = 0;
  std::size_t iteration_starts_ = 0;
  std::size_t forced_steps_ = 0;
  std::size_t grants_ = 0;    ///< group entries granted over all steps
  double latest_step_s_ = 0;  ///< when a step was last chosen (offer_variants has no clock)
};

/// nodegroup in the registry (registry.hpp).
[[nodiscard]] policy_entry nodegroup_entry();

}  // namespace tandem::schedule
