#pragma once
// Salus's iteration scheduling over GPU lanes (Salus §3-§4): jobs stay resident (their
// persistent memory never leaves the device, so switching between them copies nothing) and are
// switched at iteration boundaries; lanes (lanes.hpp) decide which jobs may run at once.
//
// One policy, three disciplines (Salus §4; its FIFO is the exclusive baseline, registered as
// "fifo" too):
//   srtf  one lane: one iteration at a time over every admitted job, the job with the shortest
//         remaining time first (iterations left x its measured iteration time, or the time left
//         of a job that runs for a duration); preemptive at iteration boundaries.
//   pack  as many lanes as the safety condition allows (Algorithm 1); within a lane the job
//         admitted first runs until it leaves: makespan, no fairness.
//   fair  lanes as pack; within a lane the job with the least device time so far goes next,
//         which equalizes device time among a lane's jobs (Salus §4.3).
// Inference jobs (job_info::inference) with a waiting request go before training jobs of their
// lane in every discipline: a request is short and someone waits for it.
//
// Memory needs. A job's persistent need P is what it holds after an iteration, its ephemeral need
// E the most an iteration takes on top (iteration reports: held regions). Salus knows them in
// advance; here they come from job_info::need, else from an earlier job with the same signature,
// else from a probe: the job's first iteration (which builds it) runs while no other iteration
// runs, and only while a job as large as the largest need seen would be admitted (so that a
// probed job seldom waits outside the lanes holding its persistent memory). Needs are updated after
// every iteration; a job whose iteration outgrew its lane is moved at that boundary.
//
// Admission (Salus Algorithm 1) happens at every event: jobs with known needs that are not in a
// lane are tried in arrival order after lanes are defragmented; one that does not fit waits
// (waiting_reason says why) and is tried again when memory frees. A job that could never fit
// (P + E above the budget) is refused with a config_error naming both numbers.
//
// Footprint plans (chooses_footprint.hpp; `[policy] planner = ...`): when the executor offers a
// job's iteration under plans that lower its peak, the job's need under variant k is its P (every
// variant holds the same regions between iterations) and E_k = the variant's peak - what it holds
// at its start, until an iteration under k measures it (the largest seen, kept per variant). A
// job is admitted plain when it fits, as without plans; where it would wait (or, too large for
// every budget plain, be refused) it is admitted instead under the first plan whose need fits,
// its lane sized by that E_k, and runs every iteration under that plan while it holds the lane
// (a job admitted plain stays plain). Iterations alone (probes, jobs outside the lanes) run plain
// when that fits beside the others' persistent memory, else the first plan that does.
//
// The budget stays a hard guarantee even while lanes are being reorganized: an iteration starts
// only while the persistent memory of every built job, the needs of the iterations running and
// its own need fit the budget. A probe is the exception: its need is unknown until it has run,
// and beside the persistent memory of built jobs one that needs more than is left gets stuck and
// restarts (probe_may_go), learning its least need; a need given in job_info::need or learned from
// a twin avoids the probe. A
// built job without a lane (its probe or a grown iteration left it out) waits for admission like
// the others, its persistent memory taken off the capacity the lanes see; whenever no lane's next
// job can start it runs its iterations alone. When it does not fit alone either and nothing runs, a
// lane member that fits goes out of turn: some job always moves, and memory frees as jobs leave.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tandem/schedule/chooses_footprint.hpp"
#include "tandem/schedule/explains_waiting.hpp"
#include "tandem/schedule/lanes.hpp"
#include "tandem/schedule/policy.hpp"
#include "tandem/schedule/policy_entry.hpp"
#include "tandem/schedule/reports_statistics.hpp"

namespace tandem::schedule {

enum class salus_discipline { srtf, pack, fair };

/// The registry name of a discipline ("srtf", "pack", "fair").
[[nodiscard]] std::string_view to_string(salus_discipline discipline);

/// What the policy did for one job.
struct salus_job_stats {
  double service_s = 0;              ///< device time: the sum of its iterations' durations
  std::int64_t preemptions = 0;      ///< its lane's next iteration went to another job
  std::int64_t solo_iterations = 0;  ///< probes and iterations run alone, outside the lanes
  std::int64_t lane_moves = 0;       ///< times it was moved to another lane
  std::int64_t planned = 0;          ///< iterations run under a footprint plan (a variant > 0)
  std::int64_t plan_admissions = 0;  ///< admissions to a lane that only a plan made possible
};

class salus_policy final : public policy,
                           public explains_waiting,
                           public reports_statistics,
                           public chooses_footprint {
 public:
  salus_policy(std::size_t budget_bytes, salus_discipline discipline);

  [[nodiscard]] std::string_view name() const override { return to_string(discipline_); }
  void on_arrival(const job_info& job, double now_s) override;
  void on_departure(job_id job, double now_s) override;
  void on_iteration_start(job_id job, double now_s) override;
  void on_iteration_end(job_id job, const iteration_report& report, double now_s) override;
  void on_budget_change(std::size_t budget_bytes, double now_s) override;
  [[nodiscard]] decision may_start(job_id job, double now_s) override;
  // explains_waiting
  [[nodiscard]] std::string waiting_reason(job_id job) const override;
  // reports_statistics
  [[nodiscard]] std::vector<policy_statistic> job_statistics(job_id job) const override;
  [[nodiscard]] std::vector<policy_statistic> system_statistics() const override;
  // chooses_footprint
  void offer_variants(job_id job, std::vector<footprint_variant> variants) override;
  [[nodiscard]] std::size_t chosen_variant(job_id job) const override;

  /// The lanes as they stand (for tests and reports).
  [[nodiscard]] const lane_assignment& lanes() const { return lanes_; }

 private:
  struct job_state {
    job_info info;
    std::optional<memory_need> need;  // given, inherited by signature or measured
    bool measured = false;            // `need` comes from its own iterations
    bool impossible = false;          // its need exceeds every budget given so far, on its own
    bool built = false;               // has started an iteration: holds its persistent memory
    bool laned = false;
    bool running = false;
    bool solo = false;    // runs (or was let start) alone: a probe or outside the lanes
    bool asking = false;  // asked since its last iteration ended and has not started
    double asking_since_s = 0;
    std::optional<double> first_start_s;
    std::int64_t iterations_done = 0;
    double first_iteration_s = 0;
    double measured_s = 0;  // total duration of its iterations after the first
    std::string reason;     // why it waits, when it waits for more than its turn
    std::array<std::size_t, 5> refused_figures{};  // what `reason` was written from
    // Offered footprint variants (0: plain), each one's peak and ephemeral need as predicted;
    // empty when none were offered.
    std::vector<std::size_t> offered_peak;
    std::vector<std::size_t> offered_ephemeral;
    // The largest ephemeral need measured under each plan (index 0 unused: `need` is plain's).
    std::vector<std::optional<std::size_t>> measured_ephemeral;
    std::size_t variant = 0;          // the variant it holds its lane under
    std::size_t chosen = 0;           // the variant of the latest start verdict
    std::size_t running_variant = 0;  // the variant of the iteration under way (or the last)
    salus_job_stats stats;
  };
  struct known_kind {  // what a job of a signature was measured to need
    memory_need need;
    double iteration_s = 0;
  };

  job_state& state_of(job_id job, const char* call);
  /// How many ways the job can run: 1 without an offer.
  [[nodiscard]] static std::size_t variant_count(const job_state& s);
  /// Its need under variant `k` (0: plain); `s.need` must be known.
  [[nodiscard]] static memory_need need_of(const job_state& s, std::size_t k);
  /// The variant an iteration alone runs: plain when it fits beside what the built jobs hold,
  /// else the first plan that does (a probe: the last when none does); nullopt for a built job
  /// none of whose variants fits.
  [[nodiscard]] std::optional<std::size_t> variant_alone(const job_state& s) const;
  [[nodiscard]] static double iteration_s(const job_state& s);
  [[nodiscard]] double remaining_s(const job_state& s, double now_s) const;
  [[nodiscard]] bool anyone_running() const;
  [[nodiscard]] bool someone_solo() const;
  /// Persistent bytes of the built jobs.
  [[nodiscard]] std::size_t resident_bytes() const;
  /// Resident bytes plus the ephemeral needs of the iterations running.
  [[nodiscard]] std::size_t committed_bytes() const;
  /// Whether a job of `signature` is being probed now.
  [[nodiscard]] bool probing(const std::string& signature) const;
  /// Whether a probe may go: a job as large as the largest need seen would be admitted now.
  [[nodiscard]] bool probe_may_go() const;
  [[nodiscard]] bool fits_now(const job_state& s) const;
  /// Whether some lane's next job (by the discipline) fits now.
  [[nodiscard]] bool a_lane_can_start() const;
  /// The job that goes next alone (a probe or a built job without a lane), if one may.
  [[nodiscard]] std::optional<job_id> next_solo() const;
  /// The member of `l` that goes next by the discipline, among those that want to run (and, with
  /// `fitting_only`, fit now).
  [[nodiscard]] std::optional<job_id> next_in_lane(const lane& l, bool fitting_only = false) const;
  /// Whether `job`, not its lane's next, starts anyway: nothing runs, no lane's next job fits and
  /// nobody may go alone, and it is the lane's best member that fits.
  [[nodiscard]] bool goes_out_of_turn(const lane& l, job_id job) const;
  /// Whether some lane has a member that fits now, its next job or not.
  [[nodiscard]] bool a_lane_member_fits() const;
  /// Defragments and admits waiting jobs with known needs, in arrival order (Algorithm 1).
  void admit_waiting();

  std::size_t budget_;
  // The largest budget given so far: a job that needs more than that can never run, while one
  // that needs more than a budget lowered since waits for it to be raised again.
  std::size_t largest_budget_;
  salus_discipline discipline_;
  lane_assignment lanes_;
  std::map<job_id, job_state> jobs_;
  std::vector<job_id> arrival_order_;  // present jobs by (arrival, id)
  std::map<std::string, known_kind> by_signature_;
  std::map<job_id, salus_job_stats> departed_;
  std::map<std::size_t, std::optional<job_id>> last_in_lane_;  // by lane id: who ran last
  double now_s_ = 0;  // the latest time the driver passed in
  std::size_t most_lanes_ = 0;
  std::int64_t admissions_ = 0;
  std::int64_t refusals_ = 0;  // times a job began to wait for memory
  std::int64_t probes_ = 0;
  std::int64_t reorganizations_ = 0;
  std::int64_t plan_admissions_ = 0;
};

/// One discipline in the registry (registry.hpp), under its name; none takes options.
[[nodiscard]] policy_entry salus_entry(salus_discipline discipline);

}  // namespace tandem::schedule
