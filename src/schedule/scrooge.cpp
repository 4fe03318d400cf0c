#include "tandem/schedule/scrooge.hpp"

#include <algorithm>
#include <cmath>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::schedule {

scrooge_policy::scrooge_policy(std::size_t budget_bytes, scrooge_options options)
    : budget_(budget_bytes), options_(options) {
  TANDEM_EXPECTS(options.ramp_start > 0 && options.ramp_start <= 1, config_error,
                 "scrooge: ramp_start must be in (0, 1], not " +
                     std::to_string(options.ramp_start) + "; 1 turns the ramp off");
  TANDEM_EXPECTS(options.ramp_iterations >= 0, config_error,
                 "scrooge: ramp_iterations must be 0 or more");
  TANDEM_EXPECTS(options.fallback_threshold > 0 && std::isfinite(options.fallback_threshold),
                 config_error, "scrooge: fallback_threshold must be a positive fraction");
  TANDEM_EXPECTS(options.poll_s > 0 && std::isfinite(options.poll_s), config_error,
                 "scrooge: poll must be a positive number of seconds");
}

void scrooge_policy::on_arrival(const job_info& job, double) {
  jobs_[job.id].name = job.name;
}

void scrooge_policy::on_departure(job_id job, double) {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return;
  departed_[job] = found->second.stats;
  jobs_.erase(found);
}

void scrooge_policy::on_budget_change(std::size_t budget_bytes, double) {
  budget_ = budget_bytes;
}

std::size_t scrooge_policy::effective_budget() const {
  if (options_.ramp_iterations <= 0 || informed_iterations_ >= options_.ramp_iterations) {
    return budget_;
  }
  const double progress =
      static_cast<double>(informed_iterations_) / static_cast<double>(options_.ramp_iterations);
  const double fraction = options_.ramp_start + (1 - options_.ramp_start) * progress;
  return static_cast<std::size_t>(fraction * static_cast<double>(budget_));
}

bool scrooge_policy::runs_alone(const job_state& state) {
  return state.now != phase::informed || !state.profile;
}

bool scrooge_policy::anyone_running_except(job_id job) const {
  return std::any_of(jobs_.begin(), jobs_.end(),
                     [&](const auto& entry) { return entry.first != job && entry.second.running; });
}

bool scrooge_policy::someone_runs_alone() const {
  return std::any_of(jobs_.begin(), jobs_.end(), [](const auto& entry) {
    return entry.second.running && runs_alone(entry.second);
  });
}

bool scrooge_policy::admits(job_id job) const {
  std::size_t held = 0;
  std::size_t largest_peak = 0;
  for (const auto& [id, other] : jobs_) {
    if (id == job) continue;
    // What each holds between iterations: a running job's transient regions do not count.
    if (other.profile && (other.running || progress_ == nullptr)) {
      held += other.profile->curve.held_at_end();
    } else if (progress_ != nullptr) {
      held += progress_->progress(id).held_bytes;
    }
    if (other.profile) largest_peak = std::max(largest_peak, other.profile->peak);
  }
  return held == 0 || held + largest_peak <= budget_;
}

std::size_t scrooge_policy::idle_holdings_except(job_id job) const {
  std::size_t held = 0;
  for (const auto& [id, state] : jobs_) {
    if (id != job && state.profile) held += state.profile->curve.held_at_end();
  }
  return held;
}

decision scrooge_policy::may_start(job_id job, double now_s) {
  const auto found = jobs_.find(job);
  TANDEM_EXPECTS(found != jobs_.end(), usage_error,
                 "scrooge: job " + std::to_string(job) + " asked to start before it arrived");
  auto& state = found->second;
  if (!state.first_ask_s) state.first_ask_s = now_s;
  if (someone_runs_alone() && !state.running) return wait_for_event(state);
  if (runs_alone(state)) {
    // Profiling and fallback iterations run alone; while one waits for the others' iterations
    // to end, nobody starts a new one, so it cannot be starved.
    // A newcomer that is not admitted holds nobody up: it waits for a departure.
    if (!state.admitted && !admits(job)) return wait_for_event(state);
    return anyone_running_except(job) ? wait_for_event(state) : decision::start();
  }
  // Judged afresh at every ask rather than remembered: a remembered wish to run alone outlived
  // the job's later verdict (not admitted: it waits for a departure), and every job then waited
  // for another with no event to come.
  const bool someone_waits_to_run_alone =
      std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
        return entry.first != job && waits_to_run_alone(entry.first, entry.second);
      });
  if (someone_waits_to_run_alone) return wait_for_event(state);
  const usage_curve& candidate = state.profile->curve;
  const std::size_t peak = state.profile->peak;
  if (peak > budget_) {
    TANDEM_FAIL(config_error,
                "scrooge: job '" + state.name + "' holds up to " + format_bytes(peak) +
                    " at its peak, more than the whole budget of " + format_bytes(budget_) +
                    "; raise the budget or shrink the job (batch size, model)");
  }
  if (progress_ != nullptr) return decide_by_progress(job, state, now_s);
  others_.clear();
  for (const auto& [id, other] : jobs_) {
    if (id == job) continue;
    const auto* profile = other.profile ? &*other.profile : nullptr;
    others_.push_back({profile ? &profile->curve : nullptr, other.running, other.started_s,
                       profile ? profile->curve.held_at_end() : 0, profile});
  }
  auto shift = solver_.solve(now_s, effective_budget(), candidate, peak, others_);
  if (!shift && !anyone_running_except(job)) {
    // Nobody's iteration is in the way: only the ramp can refuse, and it must not block
    // progress. Beside the others' idle holdings the real budget decides.
    shift = solver_.solve(now_s, budget_, candidate, peak, others_);
    if (!shift) return wait_for_event(state);  // their holdings leave no room: wait for a departure
  }
  if (!shift) return wait_for_event(state);
  if (*shift <= 0) return decision::start();
  state.asked_while_blocked = true;
  return decision::wait_until(now_s + *shift);
}

bool scrooge_policy::waits_to_run_alone(job_id job, const job_state& state) const {
  return runs_alone(state) && !state.running && state.first_ask_s &&
         (state.admitted || admits(job));
}

decision scrooge_policy::wait_for_event(job_state& state) {
  state.stats.event_waits += 1;
  state.asked_while_blocked = true;
  return decision::wait_for_event();
}

std::size_t scrooge_policy::most_it_may_hold(job_id id, const job_state& state) const {
  const auto seen = progress_->progress(id);
  if (!state.running || !state.profile) return seen.held_bytes;
  return std::max(seen.held_bytes, state.profile->most_held_after_events(seen.region_events));
}

decision scrooge_policy::decide_by_progress(job_id job, job_state& state, double now_s) {
  const std::size_t peak = state.profile->peak;
  const std::size_t budget = effective_budget();
  std::size_t others_most = 0;
  std::size_t all_idle = 0;  // what every job holds between its iterations
  bool anyone_running = false;
  most_held_.clear();  // in jobs_ order, the asking job's entry unused
  idle_held_.clear();
  for (const auto& [id, other] : jobs_) {
    most_held_.push_back(id == job ? 0 : most_it_may_hold(id, other));
    others_most += most_held_.back();
    anyone_running = anyone_running || (id != job && other.running);
    idle_held_.push_back(other.running && other.profile ? other.profile->curve.held_at_end()
                                                        : progress_->progress(id).held_bytes);
    all_idle += idle_held_.back();
  }
  const bool fits = others_most + peak <= budget ||
                    (!anyone_running && others_most + peak <= budget_);  // progress
  if (fits) {
    // No overtaking: a job that has asked earlier and is still waiting must fit beside this one
    // too, or this one waits for it (otherwise a short job could restart forever before it).
    // An earlier waiter that does not fit even beside everyone's idle holdings waits for a
    // departure, which this job's iterations only bring closer: it is not waited for.
    std::size_t index = 0;
    for (const auto& [id, other] : jobs_) {
      const std::size_t other_most = most_held_[index];
      const std::size_t other_idle = idle_held_[index++];
      if (id == job || other.running || !other.first_ask_s || !other.profile) continue;
      const bool earlier = *other.first_ask_s < *state.first_ask_s ||
                           (*other.first_ask_s == *state.first_ask_s && id < job);
      if (!earlier) continue;
      if (all_idle - other_idle + other.profile->peak > budget_) continue;
      const std::size_t beside = others_most - other_most + peak;
      if (beside + other.profile->peak > budget) return wait_for_event(state);
    }
    return decision::start();
  }
  // Idle holdings leave no room: only a departure can make some.
  if (!anyone_running) return wait_for_event(state);
  // Room opens as the running jobs return regions, which the driver does not announce: ask again
  // soon. (The TimeShift's estimate would be a guess here: co-located jobs run at other speeds.)
  state.asked_while_blocked = true;
  return decision::wait_until(now_s + options_.poll_s);
}

void scrooge_policy::on_iteration_start(job_id job, double now_s) {
  auto& state = jobs_.at(job);
  state.running = true;
  state.admitted = true;
  state.started_s = now_s;
  if (state.asked_while_blocked) {
    state.stats.delayed += 1;
    state.stats.total_shift_s += now_s - state.first_ask_s.value_or(now_s);
  }
  state.asked_while_blocked = false;
  state.first_ask_s.reset();
  if (anyone_running_except(job)) state.stats.shared_starts += 1;
}

bool scrooge_policy::missed_prediction(const usage_curve& predicted,
                                       const usage_curve& observed) const {
  const double slack = 1 + options_.fallback_threshold;
  if (static_cast<double>(observed.peak()) > slack * static_cast<double>(predicted.peak())) {
    return true;
  }
  // Deciding by progress does not rely on timing, so an iteration that only ran slower (compute
  // shared with the others) is no reason to stop sharing; deciding by TimeShift does.
  return progress_ == nullptr && observed.duration_s > slack * predicted.duration_s;
}

void scrooge_policy::on_iteration_end(job_id job, const iteration_report& report, double) {
  auto& state = jobs_.at(job);
  state.running = false;
  state.stats.iterations += 1;
  usage_curve observed = report.held;
  if (observed.duration_s <= 0) observed.duration_s = report.end_s - report.start_s;
  switch (state.now) {
    case phase::profiling:
      state.now = phase::informed;
      break;
    case phase::informed:
      informed_iterations_ += 1;
      if (state.profile && missed_prediction(state.profile->curve, observed)) {
        state.now = phase::fallback;
        state.stats.fallbacks += 1;
      }
      break;
    case phase::fallback:
      if (!state.profile || !missed_prediction(state.profile->curve, observed)) {
        state.now = phase::informed;
      }
      break;
  }
  state.profile.emplace(std::move(observed));  // feedback: the latest lifespans predict the next
}

scrooge_job_stats scrooge_policy::stats(job_id job) const {
  if (const auto found = jobs_.find(job); found != jobs_.end()) return found->second.stats;
  const auto found = departed_.find(job);
  return found == departed_.end() ? scrooge_job_stats{} : found->second;
}

namespace {

std::vector<policy_statistic> statistics_of(const scrooge_job_stats& s) {
  const auto count = [](std::int64_t n) { return static_cast<double>(n); };
  return {{"iterations", count(s.iterations)},
          {"delayed", count(s.delayed)},
          {"total_shift_s", s.total_shift_s},
          {"mean_shift_s", s.delayed > 0 ? s.total_shift_s / count(s.delayed) : 0.0},
          {"fallbacks", count(s.fallbacks)},
          {"event_waits", count(s.event_waits)},
          {"shared_starts", count(s.shared_starts)}};
}

}  // namespace

std::vector<policy_statistic> scrooge_policy::job_statistics(job_id job) const {
  return statistics_of(stats(job));
}

std::vector<policy_statistic> scrooge_policy::system_statistics() const {
  scrooge_job_stats total;
  const auto add = [&](const scrooge_job_stats& s) {
    total.iterations += s.iterations;
    total.delayed += s.delayed;
    total.total_shift_s += s.total_shift_s;
    total.fallbacks += s.fallbacks;
    total.event_waits += s.event_waits;
    total.shared_starts += s.shared_starts;
  };
  for (const auto& [id, state] : jobs_) add(state.stats);
  for (const auto& [id, s] : departed_) add(s);
  auto statistics = statistics_of(total);
  statistics.push_back({"effective_budget_bytes", static_cast<double>(effective_budget())});
  return statistics;
}

}  // namespace tandem::schedule
