#include "tandem/sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "prepared_profile.hpp"
#include "tandem/common/csv.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/schedule/policy_capabilities.hpp"
#include "tandem/schedule/policy_driver.hpp"

namespace tandem::sim {
namespace {

using detail::prepared_profile;
using schedule::decision;

constexpr double never = std::numeric_limits<double>::infinity();

/// A position reached within rounding of a boundary counts as at it.
bool reached(double position, double boundary) {
  return position >= boundary - 1e-12 * std::max(1.0, std::abs(boundary));
}

/// waiting: for a start (iteration or setup); at_group: stopped at a group boundary, waiting to
/// enter the next group (policy.hpp, group gating); blocked: mid-iteration, a region borrow the
/// policy refused (borrow_arbiter.hpp), waiting for other jobs' returns.
enum class stage { pending, waiting, setup, running, at_group, blocked, done };

/// What asking for regions came to.
enum class taken { yes, waiting, restarted, failed };

struct job_run {
  const simulated_job* job = nullptr;
  const prepared_profile* prepared = nullptr;
  /// Its footprint variants prepared (0: plain); empty when it has none.
  std::vector<const prepared_profile*> variants;
  schedule::job_id id = 0;
  stage now = stage::pending;

  // Setup and the running iteration.
  double setup_end = 0;
  double iteration_start = 0;
  double requested = 0;          ///< when it last asked the policy to start an iteration
  double position = 0;           ///< solo seconds into the iteration, where its device is
  double scale = 1;              ///< this iteration's jitter: real solo time = profile time x scale
  detail::stream_cursor cursor;  ///< its host and device within the prepared profile's stages
  double host_rate = 0;          ///< host seconds per second while running
  double device_rate = 0;        ///< device seconds per second while running
  double device_target = 0;      ///< device seconds into its stage where its next boundary lies
  double target_position = 0;    ///< that boundary's position
  std::size_t next_held_step = 0;
  schedule::usage_curve observed;
  std::vector<double> group_starts;              ///< positions of this iteration's group boundaries
  std::size_t next_group = 0;                    ///< index into group_starts
  double memory_waited_at_start = 0;             ///< the driver's count of its memory waits
  double group_waited = 0;                       ///< this iteration's waits at group boundaries
  std::optional<runtime::injected_fault> fault;  ///< the failure planned for it, if any
  double fault_position = never;                 ///< where in this iteration the fault strikes
  sim::iteration_progress progress;  ///< kept for a job re-planned on drift: how it went

  bool set_up = false;  ///< built: holds its persistent memory
  std::size_t held = 0;
  std::uint64_t blocked_order = 0;      ///< when blocked: the order it was blocked in
  std::optional<std::size_t> limit;     ///< the policy's limit on what it may hold
  stage blocked_from = stage::running;  ///< when blocked: waiting (its build) or running
  std::size_t wanted = 0;               ///< when blocked: the bytes it asked for
  runtime::job_result result;

  [[nodiscard]] const job_profile& profile() const { return *prepared->profile; }
  /// The next position at which something happens: a region move, a group boundary, the fault.
  [[nodiscard]] double next_boundary() const {
    double boundary = never;
    const auto& steps = profile().held.steps;
    if (next_held_step < steps.size()) boundary = steps[next_held_step].at_s;
    if (next_group < group_starts.size()) boundary = std::min(boundary, group_starts[next_group]);
    return std::min(boundary, fault_position);
  }
};

class engine final : public schedule::progress_source, public schedule::driver_clock {
 public:
  engine(const std::vector<simulated_job>& jobs, schedule::policy& policy,
         const device_model& device, const std::vector<runtime::budget_change>& budget_schedule,
         const sim_options& options)
      : policy_(policy),
        device_(device),
        budget_(device.budget == 0 ? device.capacity : device.budget),
        options_(options),
        random_(options.seed),
        driver_(policy, *this, jobs.size(),
                [this](schedule::job_id job, std::optional<std::size_t> limit) {
                  runs_.at(job).limit = limit;
                }),
        capabilities_(driver_.capabilities()) {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto& job = jobs[i];
      TANDEM_EXPECTS(job.profile != nullptr, usage_error,
                     "job '" + job.spec.name + "' has no profile to simulate");
      TANDEM_EXPECTS(!job.profile->operations.empty() && job.profile->solo_iteration_s() > 0,
                     usage_error,
                     "job '" + job.spec.name + "': its profile has no operations with a duration");
      prepared_.emplace_back(*job.profile);
    }
    runs_.resize(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto& run = runs_[i];
      run.job = &jobs[i];
      run.prepared = &prepared_[i];
      if (jobs[i].variants != nullptr && jobs[i].variants->profiles.size() > 1) {
        run.variants.push_back(run.prepared);
        const auto& profiles = jobs[i].variants->profiles;
        for (std::size_t k = 1; k < profiles.size(); ++k) {
          run.variants.push_back(&prepared_.emplace_back(*profiles[k]));
        }
      }
      run.id = static_cast<schedule::job_id>(i);
      run.result.name = jobs[i].spec.name;
      run.result.model = jobs[i].spec.model;
      run.result.batch_size = jobs[i].spec.batch_size;
      run.result.threads = jobs[i].spec.threads;
      run.result.arrival_s = jobs[i].spec.arrival_s;
      run.result.persistent_bytes = prepared_[i].persistent;
      run.result.peak_live_bytes = jobs[i].profile->peak_live_bytes;
      run.fault = runtime::fault_for(options.faults, jobs[i].spec.name);
    }
    driver_.set_budget_schedule(
        runtime::driver_budget_schedule(budget_schedule), [this](std::size_t bytes) {
          budget_ = bytes;
          returns_since_retry_ = true;  // a raise may let blocked jobs go on
        });
    // Arrivals in time order; equal times keep the workload's order (as the runtime does).
    for (std::size_t i = 0; i < runs_.size(); ++i) arrivals_.push_back(i);
    std::stable_sort(arrivals_.begin(), arrivals_.end(), [&](std::size_t a, std::size_t b) {
      return jobs[a].spec.arrival_s < jobs[b].spec.arrival_s;
    });
    // Times to the microsecond, as a real run's timeline has them: the stream's default six
    // significant digits would round a trace hours long to a tenth of a second.
    if (options_.timeline)
      *options_.timeline << std::fixed << std::setprecision(6) << "time_s,job,event,held_bytes\n";
  }

  [[nodiscard]] double now() const override { return now_; }

  [[nodiscard]] schedule::job_progress_view progress(schedule::job_id job) const override {
    const auto& run = runs_.at(job);
    if (run.now != stage::running && run.now != stage::at_group && run.now != stage::blocked)
      return {0, run.held};
    return {run.next_held_step, run.held};
  }

  runtime::run_result run() {
    if (capabilities_.progress != nullptr) capabilities_.progress->set_progress_source(this);
    while (!all_done()) {
      const double next = next_event_time();
      if (next == never) {
        fail_stalled();
        break;
      }
      if (next > options_.horizon_s) {
        if (capabilities_.progress != nullptr) capabilities_.progress->set_progress_source(nullptr);
        throw config_error(past_horizon());
      }
      advance_to(next);
      handle_events();
    }
    if (capabilities_.progress != nullptr) capabilities_.progress->set_progress_source(nullptr);
    return summarize();
  }

 private:
  // --- time ---------------------------------------------------------------------------------

  [[nodiscard]] bool all_done() const {
    return next_arrival_ == arrivals_.size() && active_.empty();
  }

  /// Host and device seconds each running job advances per second of real time. Hosts share
  /// the host cores; devices share the device by processor sharing weighted by fill, a job whose
  /// device waits for its host taking only what its host lets it use (water-filling: the share
  /// s solves sum of fill x min(demand, s) = 1 when the demands do not all fit).
  void compute_rates() {
    std::size_t busy_hosts = 0;
    std::size_t paging_jobs = 0;
    for (const auto i : active_) {
      const auto& run = runs_[i];
      if (run.now != stage::running) continue;
      ++paging_jobs;
      if (run.cursor.host_busy(run.prepared->stages, device_.in_flight_ops)) ++busy_hosts;
    }
    const double host_share =
        device_.host_cores == 0 || busy_hosts <= device_.host_cores
            ? 1
            : static_cast<double>(device_.host_cores) / static_cast<double>(busy_hosts);
    demands_.clear();
    double wanted = 0;
    for (const auto i : active_) {
      auto& run = runs_[i];
      if (run.now != stage::running) continue;
      const auto& stages = run.prepared->stages;
      const bool host = run.cursor.host_busy(stages, device_.in_flight_ops);
      run.host_rate = host ? host_share / run.scale : 0;
      const double demand = run.cursor.device_demand(stages, host_share * (host ? 1 : 0));
      const double fill =
          run.cursor.done(stages) ? 0 : run.prepared->segments[run.cursor.device_stage].fill;
      if (demand > 0) demands_.push_back({demand, fill});
      wanted += demand * fill;
      run.device_rate = demand;  // the share it can use; the device's share applies below
    }
    const double share = wanted <= 1 ? 1 : water_level();
    double oversubscribed = 0;
    if (device_.unified_memory && held_total_ > device_.capacity)
      oversubscribed =
          static_cast<double>(held_total_ - device_.capacity) / static_cast<double>(held_total_);
    for (const auto i : active_) {
      auto& run = runs_[i];
      if (run.now != stage::running) continue;
      const double speed = std::min(run.device_rate, share);
      if (speed <= 0) {
        run.device_rate = 0;
      } else {
        // Seconds per device second: compute, plus paging the non-resident share of what the
        // operation touches over the link the paging jobs share.
        double seconds = run.scale / speed;
        if (oversubscribed > 0) {
          seconds += oversubscribed * run.prepared->segments[run.cursor.device_stage].touch_rate *
                     run.scale * static_cast<double>(paging_jobs) / device_.pcie_bandwidth;
        }
        run.device_rate = 1 / seconds;
      }
      run.device_target = device_target_of(run);
      run.target_position = run.next_boundary();
    }
  }

  /// The share s < 1 at which the demands (share of solo speed, fill) use the whole device.
  double water_level() {
    std::sort(demands_.begin(), demands_.end());
    double capacity = 1;
    double fill = 0;
    for (const auto& d : demands_) fill += d.second;
    for (const auto& [demand, f] : demands_) {
      if (fill <= 0 || demand * fill <= capacity) {
        capacity -= demand * f;  // fully served below the level
        fill -= f;
        continue;
      }
      break;
    }
    return fill > 0 ? capacity / fill : 1;
  }

  /// Device seconds into its current stage where the job's next boundary lies (infinity when
  /// beyond the stage: the stage's end is an event of its own).
  [[nodiscard]] static double device_target_of(const job_run& run) {
    const auto& stages = run.prepared->stages;
    const auto k = run.cursor.device_stage;
    if (k >= stages.size()) return never;
    const auto& seg = run.prepared->segments[k];
    const double boundary = run.next_boundary();
    if (boundary >= seg.end || seg.end <= seg.start) return never;
    return std::max(0.0, (boundary - seg.start) / (seg.end - seg.start)) * stages[k].device_s;
  }

  /// The position (solo seconds into the iteration) where the job's device is.
  static void update_position(job_run& run) {
    const auto& stages = run.prepared->stages;
    const auto& segments = run.prepared->segments;
    const auto k = run.cursor.device_stage;
    if (k >= stages.size()) {
      run.position = segments.back().end;
      return;
    }
    const double d = stages[k].device_s;
    const double share = d > 0 ? run.cursor.device_into / d : 0;
    // Landing on its target puts it exactly on the boundary, not a rounding away.
    if (run.device_target != never && run.cursor.device_into == run.device_target) {
      run.position = std::max(run.position, run.target_position);
      return;
    }
    run.position =
        std::max(run.position, segments[k].start + share * (segments[k].end - segments[k].start));
  }

  /// Its stream can move on without taking time: it was let go (at a group boundary, or after a
  /// refused borrow) where cross_boundary had stopped before settling it. Host-bound, with the
  /// host's and the device's stage both done, its rates are 0 until it settles, so this is an
  /// event now (cross_boundary settles it), not a wait for one that never comes.
  [[nodiscard]] bool can_settle(const job_run& run) const {
    auto cursor = run.cursor;
    return cursor.settle(run.prepared->stages, device_.in_flight_ops);
  }

  double next_event_time() {
    compute_rates();
    double next = never;
    if (next_arrival_ < arrivals_.size())
      next = std::max(now_, runs_[arrivals_[next_arrival_]].job->spec.arrival_s);
    for (const auto i : active_) {
      const auto& run = runs_[i];
      switch (run.now) {
        case stage::pending:
        case stage::blocked:  // moved on by returns (handle_events), never by the clock
        case stage::waiting:  // moved on by the driver (its wake times are below)
        case stage::at_group:
          break;
        case stage::setup:
          next = std::min(next, run.setup_end);
          break;
        case stage::running:
          if (reached(run.position, run.next_boundary()) || can_settle(run)) {
            next = now_;
          } else {
            const double step = run.cursor.time_to_next(run.prepared->stages, run.host_rate,
                                                        run.device_rate, run.device_target);
            // A step below the clock's resolution at this time (now_ + step == now_) would never
            // move it: the next representable time does, and the cursor stops at its boundary.
            // (Late in the hundred-job trace, 0.19 ps left of an operation at 2604 s looped.)
            const double at = now_ + step;
            next = std::min(next, step > 0 && at <= now_ ? std::nextafter(now_, never) : at);
          }
          break;
        case stage::done:
          break;
      }
    }
    if (const auto wake = driver_.next_wake()) next = std::min(next, *wake);
    // A budget change may be what lets a waiting job start.
    if (const auto change = driver_.next_budget_change())
      next = std::min(next, std::max(now_, *change));
    return next;
  }

  void advance_to(double time) {
    const double dt = time - now_;
    for (const auto i : active_) {
      auto& run = runs_[i];
      if (run.now != stage::running || dt <= 0) continue;
      const bool measured = run.job->replanning != nullptr;
      if (measured) note_progress(run, now_);
      run.cursor.advance(run.prepared->stages, dt, run.host_rate, run.device_rate,
                         run.device_target);
      update_position(run);
      if (measured) note_progress(run, time);
    }
    now_ = time;
  }

  /// Where the iteration is now, for the re-planning's measure of its operations' times: a
  /// position reached, or the time it was still there (it waited, or ran host work).
  static void note_progress(job_run& run, double time) {
    auto& progress = run.progress;
    const double at = time - run.iteration_start;
    if (!progress.at_s.empty() && progress.at_s.back() == at) return;
    progress.position_s.push_back(run.position);
    progress.at_s.push_back(at);
  }

  // --- events -------------------------------------------------------------------------------

  void handle_events() {
    for (const auto& change : driver_.apply_due_budget_changes()) {
      applied_changes_.push_back({change.at_s, change.bytes});
    }
    apply_grants();
    while (next_arrival_ < arrivals_.size() &&
           runs_[arrivals_[next_arrival_]].job->spec.arrival_s <= now_) {
      const auto i = arrivals_[next_arrival_++];
      active_.push_back(i);
      arrive(runs_[i]);
    }
    // Indices, not references: a departure below leaves active_ as it is until the sweep.
    for (std::size_t k = 0; k < active_.size(); ++k) {
      auto& run = runs_[active_[k]];
      if (run.now == stage::setup && run.setup_end <= now_) {
        begin_iteration(run);
      } else if (run.now == stage::running) {
        cross_boundary(run);
        apply_grants();
      }
    }
    if (const auto wake = driver_.next_wake(); wake && *wake <= now_) {
      driver_.wake_due();
      apply_grants();
    }
    retry_blocked();
    record_system_peaks();
    std::erase_if(active_, [&](std::size_t i) { return runs_[i].now == stage::done; });
  }

  void arrive(job_run& run) {
    driver_.arrive(runtime::job_info_of(run.job->spec, run.id, now_));
    if (!run.variants.empty()) driver_.offer_variants(run.id, run.job->variants->offer());
    apply_grants();
    request_start(run);
  }

  void request_start(job_run& run) {
    run.now = stage::waiting;
    run.requested = now_;
    driver_.request_start(run.id);
    apply_grants();
  }

  /// Lets go the jobs the driver granted; what that sets off (a build that fails: a departure)
  /// may grant more, which are let go in turn.
  void apply_grants() {
    if (applying_) return;  // the loop under way takes them
    applying_ = true;
    while (driver_.has_grants()) {
      for (const auto& given : driver_.take_grants()) {
        auto& run = runs_[given.job];
        if (run.now != stage::waiting && run.now != stage::at_group) continue;  // gone meanwhile
        run.result.wait_s += given.waited_s;
        // The iteration runs the variant the policy chose (all hold the same persistent
        // regions, so the build does not depend on it).
        if (given.group == 0 && !run.variants.empty()) {
          run.prepared = run.variants.at(given.variant);
        } else if (given.group == 0 && run.job->replanning != nullptr) {
          follow_replanning(run);
        }
        if (given.group > 0) {
          run.group_waited += given.waited_s;
          ++run.next_group;
          run.now = stage::running;
        } else if (run.set_up) {
          begin_iteration(run);
        } else {
          start_setup(run);
        }
      }
    }
    applying_ = false;
  }

  /// The plan for the jobs planned with it that are present now (arrived, not gone), from this
  /// iteration on: TENSILE's plans made again on arrivals and departures.
  void follow_replanning(job_run& run) {
    std::vector<std::size_t> present;
    for (const auto& other : runs_) {
      // Arrived by now (those arriving at this very instant too: jobs started together are
      // planned together) and not gone.
      if (other.job->replanning == run.job->replanning && other.job->spec.arrival_s <= now_ &&
          other.now != stage::done)
        present.push_back(other.job->member);
    }
    std::sort(present.begin(), present.end());
    auto profile = run.job->replanning->profile_for(run.job->member, present);
    auto& prepared = replanned_[profile.get()];
    if (prepared == nullptr) {
      prepared = &prepared_.emplace_back(*profile);
      replanned_profiles_.push_back(std::move(profile));  // prepared_ points into it
    }
    run.prepared = prepared;
  }

  /// The first grant builds the job (as in the runtime): it takes its persistent regions now and
  /// starts its first iteration after the profile's setup time.
  void start_setup(job_run& run) {
    if (run.fault && !restarts(*run.fault) &&
        run.fault->allocation < run.profile().persistent_tensors.size()) {
      fail_as_injected(run);
      return;
    }
    run.set_up = true;
    if (take(run, run.profile().held.held_at_start) != taken::yes) return;
    begin_setup(run);
  }

  void begin_setup(job_run& run) {
    run.now = stage::setup;
    run.setup_end = now_ + run.profile().setup_s;
    run.result.setup_s = run.profile().setup_s;
  }

  void begin_iteration(job_run& run) {
    if (run.result.iteration_log.empty()) run.result.first_start_s = now_;
    run.now = stage::running;
    run.iteration_start = now_;
    run.position = 0;
    run.cursor = {};
    run.device_target = never;
    run.next_held_step = 0;
    run.scale = options_.jitter > 0 ? std::exp(noise_(random_) * options_.jitter) : 1;
    run.observed = {};
    run.observed.held_at_start = run.held;
    run.progress = {};
    run.memory_waited_at_start = driver_.memory_waited_s(run.id);
    run.group_waited = 0;
    // Group boundaries are allocation ordinals; the profile says when each allocation happens.
    run.group_starts.clear();
    run.next_group = 0;
    const auto& allocation_at = run.prepared->allocation_at;
    const auto boundaries = capabilities_.groups != nullptr
                                ? capabilities_.groups->group_boundaries(run.id)
                                : std::vector<std::size_t>{};
    for (const auto ordinal : boundaries) {
      if (ordinal >= allocation_at.size()) break;
      run.group_starts.push_back(allocation_at[ordinal]);
    }
    run.fault_position = fault_position_in(run, run.result.iteration_log.size());
    record(run, "iteration_start");
  }

  /// Applies what happens at the job's position: a group boundary, region moves, operations
  /// issued or completed without taking time, the end of the iteration.
  void cross_boundary(job_run& run) {
    const auto& stages = run.prepared->stages;
    for (;;) {
      // The planned fault strikes before anything else at its allocation happens.
      if (reached(run.position, run.fault_position)) {
        fail_as_injected(run);
        return;
      }
      // A group boundary comes before the region moves of the allocation that opens the group.
      if (run.next_group < run.group_starts.size() &&
          reached(run.position, run.group_starts[run.next_group])) {
        run.now = stage::at_group;
        // A simulated iteration has no state to roll back: it can restart at any boundary.
        driver_.request_group(run.id, run.next_group + 1, true);
        return;
      }
      const auto& steps = run.profile().held.steps;
      while (run.next_held_step < steps.size() &&
             reached(run.position, steps[run.next_held_step].at_s)) {
        const auto delta = steps[run.next_held_step].delta;
        // A refused borrow leaves the step to be taken again when the job is let go on.
        if (delta > 0 && take(run, static_cast<std::size_t>(delta)) != taken::yes) return;
        ++run.next_held_step;
        if (delta < 0) release(run, static_cast<std::size_t>(-delta));
        run.observed.steps.push_back({now_ - run.iteration_start, delta});
        record(run, delta > 0 ? "borrow" : "return");
      }
      if (!run.cursor.settle(stages, device_.in_flight_ops)) break;
      run.device_target = never;  // set for the stage it left
      update_position(run);
    }
    // Steps at the very end of the iteration were applied above.
    if (run.cursor.done(stages)) end_iteration(run);
  }

  void end_iteration(job_run& run) {
    run.observed.duration_s = now_ - run.iteration_start;
    if (run.job->replanning != nullptr) {
      note_progress(run, now_);
      run.job->replanning->measured(run.job->member, run.profile(), run.progress);
    }
    schedule::iteration_report report{
        run.iteration_start,
        now_,
        run.profile().peak_live_bytes,
        std::move(run.observed),
        capabilities_.groups != nullptr && capabilities_.groups->wants_memory_events()
            ? run.prepared->memory
            : std::vector<schedule::memory_event>{},
        false};
    runtime::iteration_record logged;
    logged.start_s = report.start_s;
    logged.end_s = report.end_s;
    logged.peak_bytes = report.peak_bytes;
    logged.requested_s = run.requested;
    logged.plan = run.profile().plan;
    logged.traffic = run.profile().traffic;
    logged.memory_wait_s = driver_.memory_waited_s(run.id) - run.memory_waited_at_start;
    logged.group_wait_s = run.group_waited;
    run.result.iteration_log.push_back(std::move(logged));
    driver_.finish_iteration(run.id, report);
    record(run, "iteration_end");
    const auto& spec = run.job->spec;
    const bool finished =
        spec.iterations
            ? static_cast<std::int64_t>(run.result.iteration_log.size()) >= *spec.iterations
            : now_ - run.result.first_start_s >= spec.duration_s.value_or(0);
    if (finished) {
      depart(run, runtime::job_status::completed, "");
    } else {
      request_start(run);
    }
  }

  /// Takes `bytes` of regions for `run`, blocks it when the budget or the policy's arbiter
  /// refuses and the driver says waiting can help, or fails it as the pool would.
  taken take(job_run& run, std::size_t bytes) {
    const auto& limit = run.limit;
    if (limit && run.held + bytes > *limit) {
      out_of_memory(run, bytes,
                    "its own limit of " + format_bytes(*limit) + " (policy '" +
                        std::string(policy_.name()) + "')");
      return taken::failed;
    }
    const bool reserved =
        capabilities_.borrows == nullptr || capabilities_.borrows->try_reserve(run.id, bytes);
    const auto system = held_total_;
    const bool fits = device_.unified_memory || system + bytes <= budget_;
    if (!reserved || !fits) {
      if (reserved && capabilities_.borrows != nullptr)
        capabilities_.borrows->cancel(run.id, bytes);
      // A simulated iteration has no state to roll back: it can restart anywhere; its build
      // cannot.
      const bool in_build = run.now == stage::waiting ||
                            (run.now == stage::blocked && run.blocked_from == stage::waiting);
      const auto verdict = driver_.memory_wait(run.id, !in_build, bytes);
      if (verdict == schedule::memory_wait_verdict::keep_waiting) {
        if (run.now != stage::blocked) {
          run.blocked_order = next_blocked_order_++;
          run.blocked_from = run.now;
        }
        run.now = stage::blocked;
        run.wanted = bytes;
        restart_at_boundaries();
        return taken::waiting;
      }
      if (verdict == schedule::memory_wait_verdict::restart_iteration) {
        restart_iteration(run);
        return taken::restarted;
      }
      out_of_memory(
          run, bytes,
          "the budget of " + format_bytes(budget_) + ", with " + format_bytes(system - run.held) +
              " held by other jobs" +
              (capabilities_.borrows != nullptr ? ", none of which will return any (policy '" +
                                                      std::string(policy_.name()) + "')"
                                                : std::string()));
      return taken::failed;
    }
    run.held += bytes;
    held_total_ += bytes;
    run.result.peak_reserved_bytes = std::max(run.result.peak_reserved_bytes, run.held);
    peak_held_ = std::max(peak_held_, system + bytes);
    return taken::yes;
  }

  /// Iterations the driver told to let go where they wait at a group boundary restart there.
  void restart_at_boundaries() {
    for (const auto id : driver_.take_boundary_restarts()) {
      auto& other = runs_[id];
      if (other.now != stage::at_group) continue;
      driver_.withdraw(id);
      restart_iteration(other);
    }
  }

  /// The iteration lets go (policy_driver.hpp, "Memory waits"): what it took goes back, the
  /// driver hears of it as restarted, and the job asks to start the iteration again.
  void restart_iteration(job_run& run) {
    const auto taken_in_iteration = run.held - std::min(run.held, run.observed.held_at_start);
    run.observed.duration_s = now_ - run.iteration_start;
    schedule::iteration_report report;
    report.start_s = run.iteration_start;
    report.end_s = now_;
    report.held = std::move(run.observed);
    release(run, taken_in_iteration);
    ++run.result.restarts;
    run.result.restarted_attempts.push_back({run.iteration_start, now_});
    record(run, "iteration_restart");
    driver_.restart_iteration(run.id, std::move(report));
    request_start(run);
  }

  void release(job_run& run, std::size_t bytes) {
    bytes = std::min(bytes, run.held);
    run.held -= bytes;
    held_total_ -= bytes;
    if (capabilities_.borrows != nullptr && bytes > 0) {
      capabilities_.borrows->returned(run.id, bytes);
      returns_since_retry_ = true;
    }
  }

  /// Lets blocked jobs ask again for the borrow they were refused, in the order they were
  /// blocked, after returns, or when nobody is left running to return anything (the arbiter
  /// then lets one through or says that waiting cannot help).
  void retry_blocked() {
    for (bool again = true; again;) {
      again = false;
      std::vector<job_run*> blocked;
      bool anyone_running = false;
      for (const auto i : active_) {
        if (runs_[i].now == stage::blocked) blocked.push_back(&runs_[i]);
        anyone_running = anyone_running || runs_[i].now == stage::running;
      }
      if (blocked.empty() || (!returns_since_retry_ && anyone_running)) break;
      returns_since_retry_ = false;
      std::sort(blocked.begin(), blocked.end(), [](const job_run* a, const job_run* b) {
        return a->blocked_order < b->blocked_order;
      });
      for (auto* run : blocked) {
        const auto outcome = take(*run, run->wanted);
        if (outcome == taken::yes) {
          driver_.memory_wait_ended(run->id);
          if (run->blocked_from == stage::waiting) {  // its build
            begin_setup(*run);
          } else {
            const auto& step = run->profile().held.steps[run->next_held_step];
            ++run->next_held_step;
            run->observed.steps.push_back({now_ - run->iteration_start, step.delta});
            run->now = stage::running;  // its later steps at this moment follow as events
          }
          again = true;
        } else if (outcome != taken::waiting) {  // failed, or restarted: others may move
          again = true;
        }
      }
    }
  }

  /// Where in iteration `iteration` (0-based) the job's planned fault strikes, or never.
  [[nodiscard]] static double fault_position_in(const job_run& run, std::size_t iteration) {
    if (!run.fault) return never;
    const auto& allocation_at = run.prepared->allocation_at;
    const auto setup = run.profile().persistent_tensors.size();
    if (allocation_at.empty()) return never;
    // A restart planned at a setup allocation strikes at the first that can restart: the first
    // iteration's first.
    if (run.fault->allocation < setup && !restarts(*run.fault)) return never;
    const auto ordinal = run.fault->allocation - std::min(run.fault->allocation, setup);
    if (ordinal / allocation_at.size() != iteration) return never;
    return allocation_at[ordinal % allocation_at.size()];
  }

  [[nodiscard]] static bool restarts(const runtime::injected_fault& fault) {
    return fault.what == runtime::injected_fault::kind::restart;
  }

  /// A planned failure: the job departs as one whose allocation was refused, or whose code threw.
  /// A planned restart: the iteration lets go, once.
  void fail_as_injected(job_run& run) {
    if (restarts(*run.fault)) {
      run.fault.reset();
      run.fault_position = never;
      restart_iteration(run);
      return;
    }
    const auto& fault = *run.fault;
    run.result.out_of_memory = fault.what == runtime::injected_fault::kind::out_of_memory;
    depart(run, runtime::job_status::failed,
           "injected fault at allocation " + std::to_string(fault.allocation));
  }

  void out_of_memory(job_run& run, std::size_t bytes, const std::string& beyond) {
    run.result.out_of_memory = true;
    depart(run, runtime::job_status::failed,
           "out of memory: " + format_bytes(bytes) + " more of regions (holding " +
               format_bytes(run.held) + ") would exceed " + beyond);
  }

  void depart(job_run& run, runtime::job_status status, const std::string& error) {
    run.result.status = status;
    run.result.error = error;
    run.result.end_s = now_;
    const bool in_iteration = run.now == stage::running || run.now == stage::at_group ||
                              (run.now == stage::blocked && run.blocked_from != stage::waiting);
    if (status != runtime::job_status::completed && in_iteration)
      run.result.unfinished_start_s = run.iteration_start;
    release(run, run.held);
    run.now = stage::done;
    driver_.depart(run.id);
    apply_grants();
    record(run, status == runtime::job_status::completed ? "completed" : "failed");
  }

  /// Every job left waits for an event that cannot come: the same verdict as the runtime's
  /// policy gate, reported on every such job.
  /// What a simulation that would run on past its horizon says.
  [[nodiscard]] std::string past_horizon() const {
    std::string names;
    for (const auto& run : runs_) {
      if (run.now != stage::done) names += (names.empty() ? "" : ", ") + run.job->spec.name;
    }
    return "the simulation reached its horizon, " +
           std::to_string(std::lround(options_.horizon_s)) +
           " s of simulated time, with jobs still to finish (" + names +
           "); lower their iterations or durations, or let fewer jobs wait for one another";
  }

  void fail_stalled() {
    const auto message =
        driver_.stall_message([&](schedule::job_id job) { return runs_.at(job).job->spec.name; });
    for (auto& run : runs_) {
      if (run.now != stage::done && run.now != stage::pending)
        depart(run, runtime::job_status::failed, message);
    }
  }

  // --- accounting ---------------------------------------------------------------------------

  void record_system_peaks() {
    std::size_t live = 0;
    for (const auto i : active_) {
      const auto& run = runs_[i];
      // At a group boundary or a refused borrow, the allocation at its position waits.
      if (run.now == stage::running)
        live += run.prepared->live_at(run.position);
      else if (run.now == stage::at_group ||
               (run.now == stage::blocked && run.blocked_from != stage::waiting))
        live += run.prepared->live_before(run.position);
      else if (run.now == stage::waiting && run.set_up)
        live += run.prepared->persistent;
    }
    peak_live_ = std::max(peak_live_, live);
  }

  void record(const job_run& run, const char* event) {
    if (options_.timeline == nullptr) return;
    *options_.timeline << now_ << ',' << csv_field(run.job->spec.name) << ',' << event << ','
                       << run.held << '\n';
  }

  runtime::run_result summarize() {
    runtime::run_result result;
    result.policy = std::string(policy_.name());
    result.device = device_.description;
    result.capacity_bytes = device_.capacity;
    result.budget_bytes = device_.budget == 0 ? device_.capacity : device_.budget;
    for (const auto& change : applied_changes_) result.budget_changes.push_back(change);
    for (auto& run : runs_) {
      auto& job = run.result;
      runtime::summarize_rates(job);
      if (capabilities_.statistics != nullptr)
        job.policy_stats = capabilities_.statistics->job_statistics(run.id);
      result.jobs.push_back(std::move(job));
    }
    runtime::summarize_run(result);
    result.peak_live_bytes = peak_live_;
    result.peak_reserved_bytes = peak_held_;
    if (capabilities_.statistics != nullptr)
      result.policy_stats = capabilities_.statistics->system_statistics();
    return result;
  }

  schedule::policy& policy_;
  device_model device_;
  std::size_t budget_;
  std::vector<runtime::applied_budget_change> applied_changes_;
  sim_options options_;
  std::mt19937_64 random_;
  std::normal_distribution<double> noise_{0.0, 1.0};

  std::deque<prepared_profile> prepared_;  ///< a deque: runs point into it
  /// Profiles given by joint re-planning, and where each is prepared.
  std::vector<std::shared_ptr<const job_profile>> replanned_profiles_;
  std::map<const job_profile*, const prepared_profile*> replanned_;
  std::vector<job_run> runs_;
  std::vector<std::pair<double, double>> demands_;  ///< compute_rates' (demand, fill)
  std::vector<std::size_t> arrivals_;               ///< job indices in arrival order
  std::size_t next_arrival_ = 0;
  std::vector<std::size_t> active_;  ///< arrived and not done, in arrival order
  std::size_t held_total_ = 0;       ///< regions all jobs hold
  double now_ = 0;
  std::size_t peak_held_ = 0;
  std::size_t peak_live_ = 0;
  std::uint64_t next_blocked_order_ = 0;
  bool returns_since_retry_ = false;  ///< regions came back since blocked jobs last asked
  schedule::policy_driver driver_;    ///< the contract, shared with the runtime's policy_gate
  /// The policy's optional capabilities (a judge of borrows, groups...), as the driver found them.
  const schedule::policy_capabilities& capabilities_;
  bool applying_ = false;  ///< inside apply_grants
};

}  // namespace

runtime::run_result simulate(const std::vector<simulated_job>& jobs, schedule::policy& policy,
                             const device_model& device,
                             const std::vector<runtime::budget_change>& budget_schedule,
                             const sim_options& options) {
  engine simulation(jobs, policy, device, budget_schedule, options);
  return simulation.run();
}

}  // namespace tandem::sim
