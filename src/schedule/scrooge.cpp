#include "tandem/schedule/scrooge.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/admission.hpp"

namespace tandem::schedule {

namespace {

/// Profiling iterations at most: the first, and a second when the first made lasting state.
constexpr std::int64_t max_profiling_iterations = 2;

/// An iteration that ran beside others for less than this share of its length says too little
/// about its stretch (a host gap, the tail of another's iteration).
constexpr double least_share_beside = 0.25;
/// The most stretch counted: beyond it the device gives the pair nothing either way, and one
/// iteration that waited long for memory mid-way should not weigh for many.
constexpr double most_stretch = 4;

/// Whether an iteration ended holding more regions than it began with.
bool grew_for_good(const usage_curve& held) {
  return held.held_at_end() > held.held_at_start;
}

}  // namespace

const option_table<scrooge_options>& scrooge_options::table() {
  static const auto table =
      option_table<scrooge_options>("scrooge")
          .bind("ramp_start", &scrooge_options::ramp_start,
                {.least = 0, .most = 1, .above_least = true}, "",
                "fraction of the budget the TimeShift plans with at first; 1 turns the ramp off")
          .bind("ramp_iterations", &scrooge_options::ramp_iterations, {.least = 0, .most = 1e9}, "",
                "informed iterations over which the planned budget rises to the whole budget "
                "(0: no ramp)")
          .bind("fallback_threshold", &scrooge_options::fallback_threshold,
                {.least = 0, .above_least = true}, "",
                "how much more than predicted an iteration may hold at its peak (0.25: 25%) "
                "before its job runs alone until predictions hold again")
          .bind("claim_margin", &scrooge_options::claim_margin, {.least = 0, .most = 64}, "",
                "borrows of margin every iteration claims beyond its predicted curve, so that an "
                "iteration a region larger than the last does not leave co-located ones waiting "
                "for each other (0: exact claims)")
          .bind("weigh_waiting", &scrooge_options::weigh_waiting, {.least = 0, .most = 1}, "",
                "1: with plans offered, waits cost the share of the device they leave idle, "
                "learned from how much iterations side by side stretch each other, and a start "
                "also pays the delay it leaves the job next in line, so a plan is taken where the "
                "plain iteration would leave that job no room");
  return table;
}

policy_entry scrooge_entry() {
  return {"scrooge",
          "Zico's scheduler: an iteration starts at the smallest TimeShift that keeps the "
          "predicted sum of all jobs' region curves under the budget; every region borrow is "
          "checked so that all running iterations can still finish",
          scrooge_options::table().specs(), [](const policy_context& context) {
            return std::make_unique<scrooge_policy>(
                context.budget_bytes, scrooge_options::table().parse(context.options));
          }};
}

scrooge_policy::scrooge_policy(std::size_t budget_bytes, scrooge_options options)
    : budget_(budget_bytes),
      largest_budget_(budget_bytes),
      options_(options),
      claims_(budget_bytes,
              static_cast<std::size_t>(std::max<std::int64_t>(options.claim_margin, 0))) {
  TANDEM_EXPECTS(options.ramp_start > 0 && options.ramp_start <= 1, config_error,
                 "scrooge: ramp_start must be in (0, 1], not " +
                     std::to_string(options.ramp_start) + "; 1 turns the ramp off");
  TANDEM_EXPECTS(options.ramp_iterations >= 0, config_error,
                 "scrooge: ramp_iterations must be 0 or more");
  TANDEM_EXPECTS(options.fallback_threshold > 0 && std::isfinite(options.fallback_threshold),
                 config_error, "scrooge: fallback_threshold must be a positive fraction");
}

void scrooge_policy::on_arrival(const job_info& job, double) {
  jobs_[job.id].name = job.name;
}

void scrooge_policy::on_departure(job_id job, double now_s) {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return;
  count_time_beside(now_s);  // a job that failed mid-iteration ran beside the others until now
  departed_[job] = found->second.stats;
  jobs_.erase(found);
  std::lock_guard lock(claims_mutex_);
  auto& borrows = borrows_[job];
  departed_[job].borrow_waits = borrows.waits;
  borrows.refused = false;
  claims_.depart(job);
}

void scrooge_policy::on_budget_change(std::size_t budget_bytes, double) {
  budget_ = budget_bytes;
  largest_budget_ = std::max(largest_budget_, budget_bytes);
  std::lock_guard lock(claims_mutex_);
  claims_.set_budget(budget_bytes);
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
  return state.now != phase::informed || !curve_of(state, 0);
}

const std::shared_ptr<const indexed_curve>& scrooge_policy::curve_of(const job_state& state,
                                                                     std::size_t k) {
  if (k == 0 && (state.profile || state.variants.empty())) return state.profile;
  return state.variants.at(k);
}

double scrooge_policy::extra_s(const job_state& state, std::size_t k) {
  return k == 0 ? 0.0 : state.variant_s[k] - state.variant_s[0];
}

std::size_t scrooge_policy::least_peak(const job_state& state) {
  std::size_t least = state.profile ? state.profile->peak : 0;
  for (std::size_t k = 0; k < state.variants.size(); ++k) {
    const auto& curve = curve_of(state, k);
    if (curve && (k == 0 || curve->peak < least)) least = curve->peak;
  }
  return least;
}

std::size_t scrooge_policy::variant_alone(job_id job, const job_state& state) const {
  if (state.variants.size() <= 1) return 0;
  std::size_t others = 0;
  {
    std::lock_guard lock(claims_mutex_);
    for (const auto& [id, other] : jobs_) {
      if (id != job) others += claims_.held(id);
    }
  }
  // The quickest that fits: a plain iteration that fits only by swapping passively (real jobs
  // under a budget below their peak) is slower than a plan.
  std::optional<std::size_t> best;
  for (std::size_t k = 0; k < state.variants.size(); ++k) {
    if (!fits_beside(others, curve_of(state, k)->peak, budget_)) continue;
    if (!best || state.variant_s[k] < state.variant_s[*best]) best = k;
  }
  return best ? *best : state.variants.size() - 1;
}

void scrooge_policy::offer_variants(job_id job, std::vector<footprint_variant> variants) {
  auto& state = jobs_.at(job);
  state.variants.clear();
  state.variant_s.clear();
  state.measured.assign(variants.size(), false);
  for (auto& variant : variants) {
    state.variant_s.push_back(variant.iteration_s > 0 ? variant.iteration_s
                                                      : variant.held.duration_s);
    state.variants.push_back(std::make_shared<const indexed_curve>(std::move(variant.held)));
  }
  state.offered_s = state.variant_s;
  state.alone_s = state.variant_s;
  state.chosen = 0;
  state.stats.plans =
      state.variants.empty() ? 0 : static_cast<std::int64_t>(state.variants.size() - 1);
}

std::size_t scrooge_policy::chosen_variant(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? 0 : found->second.chosen;
}

bool scrooge_policy::anyone_running_except(job_id job) const {
  return std::any_of(jobs_.begin(), jobs_.end(),
                     [&](const auto& entry) { return entry.first != job && entry.second.running; });
}

bool scrooge_policy::someone_runs_alone() const {
  return std::any_of(jobs_.begin(), jobs_.end(), [](const auto& entry) {
    return entry.second.running && (runs_alone(entry.second) || entry.second.trial);
  });
}

std::size_t scrooge_policy::idle_held(job_id job, const job_state& state) const {
  // What it holds between iterations: a running job's transient regions do not count. What it
  // was seen to hold, or its profile's end when the driver has not reported its borrows (a
  // driver without the arbiter, a unit test).
  const std::size_t at_end = state.profile ? state.profile->curve.held_at_end() : 0;
  return state.running ? at_end : std::max(at_end, claims_.held(job));
}

bool scrooge_policy::admits(job_id job) const {
  std::lock_guard lock(claims_mutex_);
  newcomer_admission admission;
  for (const auto& [id, other] : jobs_) {
    if (id == job) {
      admission.count_own(least_peak(other));
      continue;
    }
    // The least iteration it can run: under its smallest plan, when it has plans; at least what
    // a restart showed it needs (a newcomer must not take the room it waits for).
    const std::size_t peak = std::max(least_peak(other), other.restart_need);
    admission.count(idle_held(id, other), peak);
  }
  return admission.admits(budget_);
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
    if (anyone_running_except(job)) return wait_for_event(state);
    // One that had to restart waits for what the others hold to leave.
    if (!fits_beside_idle_others(job, state)) return wait_for_event(state);
    state.chosen = variant_alone(job, state);
    return decision::start();
  }
  if (state.trial_wanted != 0 && !anyone_running_except(job)) {
    // A plan not measured yet that was the best choice: its first iteration runs alone (a
    // trial, as a job's first is a profile), so that later starts beside others plan and claim
    // with its measured curve. Before the check below: two jobs each waiting for the other's
    // trial would wait forever.
    state.chosen = state.trial_wanted;
    state.trial_wanted = 0;
    return decision::start();
  }
  // Judged afresh at every ask rather than remembered: a remembered wish to run alone outlived
  // the job's later verdict (not admitted: it waits for a departure), and every job then waited
  // for another with no event to come.
  const bool someone_waits_to_run_alone =
      std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
        return entry.first != job && waits_to_run_alone(entry.first, entry.second);
      });
  if (someone_waits_to_run_alone) return wait_for_event(state);
  const std::size_t peak = least_peak(state);
  if (peak > largest_budget_) {
    TANDEM_FAIL(config_error,
                "scrooge: job '" + state.name + "' holds up to " + format_bytes(peak) +
                    " at its peak, more than the whole budget of " + format_bytes(largest_budget_) +
                    "; raise the budget or shrink the job (batch size, model)");
  }
  return decide_by_time_shift(job, state, now_s);
}

std::optional<double> scrooge_policy::shift_for(job_id job, const indexed_curve& curve,
                                                double now_s) {
  {
    // The hard guarantee first: once started, every running iteration must still be able to
    // finish in some order. Only an iteration's end or a departure changes that. With nobody
    // else mid-iteration there is no one to finish first: a claim with its margin may not fit
    // beside the others' idle holdings although the iteration does (it would never start).
    std::lock_guard lock(claims_mutex_);
    if (anyone_running_except(job) && !claims_.admits_start(job, curve)) return std::nullopt;
  }
  auto shift = solver_.solve(now_s, effective_budget(), curve, others_);
  if (!shift && !anyone_running_except(job)) {
    // Nobody's iteration is in the way: only the ramp can refuse, and it must not block
    // progress. Beside the others' idle holdings the real budget decides.
    shift = solver_.solve(now_s, budget_, curve, others_);
  }
  return shift;
}

decision scrooge_policy::decide_by_time_shift(job_id job, job_state& state, double now_s) {
  others_.clear();
  others_ids_.clear();
  double running_end_s = now_s;  // when the iterations under way are predicted to end
  for (const auto& [id, other] : jobs_) {
    if (id == job) continue;
    others_ids_.push_back(id);
    const auto* curve = curve_of(other, other.running ? other.running_variant : other.chosen).get();
    // Between iterations a job holds what it was seen to hold; a newcomer not built yet holds
    // nothing, although its offered plans predict its persistent memory.
    std::size_t between = 0;
    if (!other.running && other.admitted) {
      std::lock_guard lock(claims_mutex_);
      between = idle_held(id, other);
    }
    others_.push_back(
        {curve ? &curve->curve : nullptr, other.running, other.started_s, between, curve});
    if (other.running && curve) {
      running_end_s = std::max(running_end_s, other.started_s + curve->curve.duration_s);
    }
  }
  // Each variant costs its delay plus its extra time over the plain iteration, both predicted
  // alone (the cost model's lengths, not measured ones that sharing stretched); waiting for an
  // event costs the time until the running iterations are predicted to end.
  std::size_t best = 0;
  std::optional<double> best_shift;
  double best_cost = std::numeric_limits<double>::infinity();
  const std::size_t count = std::max<std::size_t>(1, state.variants.size());
  // Plans are slower than the plain iteration, except where it only fits by swapping passively.
  const double quickest_s = state.variant_s.empty()
                                ? 0.0
                                : *std::min_element(state.variant_s.begin(), state.variant_s.end());
  shifts_.clear();  // by variant, as far as tried (weigh_the_next_in_line reuses them)
  const bool weighs = options_.weigh_waiting != 0 && state.variants.size() > 1;
  // Weighing, a wait costs only the share of the device it leaves idle: beside iterations that
  // fill it, waiting loses nothing the device could have done, and a plan's extra time is lost.
  const double wait_share = weighs ? share_beside_running(job, state) : 1.0;
  for (std::size_t k = 0; k < count; ++k) {
    const auto& curve = curve_of(state, k);
    shifts_.emplace_back();
    if (!curve || curve->peak > budget_) continue;
    const auto shift = shift_for(job, *curve, now_s);
    shifts_.back() = shift;
    const double extra = extra_s(state, k);
    // With nobody mid-iteration no end is coming to wait for: only a start counts.
    const double wait = shift                        ? std::max(*shift, 0.0)
                        : anyone_running_except(job) ? running_end_s - now_s
                                                     : std::numeric_limits<double>::infinity();
    const double cost = wait_share * wait + extra;
    if (cost < best_cost || (k == 0 && !shift)) {
      best = k;
      best_shift = shift;
      best_cost = cost;
    }
    // Nothing can beat starting now, as fast as any variant.
    const double own_s = k < state.variant_s.size() ? state.variant_s[k] : 0.0;
    if (shift && *shift <= 0 && own_s <= quickest_s) break;
  }
  if (weighs && best_shift) {
    best = weigh_the_next_in_line(job, state, now_s, running_end_s, best, best_shift, best_cost,
                                  wait_share);
  }
  state.chosen = best;
  if (best > 0 && !state.measured[best] && anyone_running_except(job)) {
    // The best is a plan never run: it runs alone first (a trial), once the others' iterations
    // end; meanwhile nobody starts a new one (waits_to_run_alone), so it is not starved.
    state.trial_wanted = best;
    state.chosen = 0;
    return wait_for_event(state);
  }
  if (!best_shift) return wait_for_event(state);  // no delay works before an iteration ends
  if (*best_shift <= 0) return decision::start();
  state.asked_while_blocked = true;
  if (!state.shifted_from_s) state.shifted_from_s = now_s;
  return decision::wait_until(now_s + *best_shift);
}

bool scrooge_policy::waits_beside(const job_state& state) {
  return state.now == phase::informed && state.admitted && !state.running &&
         state.trial_wanted == 0 && curve_of(state, 0);
}

std::optional<std::size_t> scrooge_policy::next_in_line() const {
  // Of the others (others_ids_), the informed job waiting longest between iterations; one that
  // has not asked yet is about to (its iteration just ended).
  std::optional<std::size_t> next;
  const auto asked = [&](std::size_t i) {
    const auto& state = jobs_.at(others_ids_[i]);
    return state.first_ask_s.value_or(std::numeric_limits<double>::infinity());
  };
  for (std::size_t i = 0; i < others_ids_.size(); ++i) {
    if (!waits_beside(jobs_.at(others_ids_[i]))) continue;
    if (!next || asked(i) < asked(*next)) next = i;
  }
  return next;
}

double scrooge_policy::waiting_cost(std::size_t waiting_at, job_id job, const indexed_curve* curve,
                                    double start_s, double now_s, double running_end_s) {
  // Its least cost (delay from now plus its variant's extra time) with the deciding job running
  // `curve` from `start_s`, or idle (no curve), as its own decision will weigh it then. Where
  // none of its variants fits beside, it waits for the iterations under way to end, plain.
  const auto& waiting = jobs_.at(others_ids_[waiting_at]);
  beside_.clear();
  for (std::size_t j = 0; j < others_.size(); ++j) {
    if (j != waiting_at) beside_.push_back(others_[j]);
  }
  double least = running_end_s - now_s;
  if (curve) {
    beside_.push_back({&curve->curve, true, start_s, 0, curve});
    least = std::max(least, start_s + curve->curve.duration_s - now_s);
  } else {
    std::lock_guard lock(claims_mutex_);
    beside_.push_back({nullptr, false, 0, idle_held(job, jobs_.at(job)), nullptr});
  }
  const std::size_t count = std::max<std::size_t>(1, waiting.variants.size());
  for (std::size_t m = 0; m < count; ++m) {
    const auto& candidate = curve_of(waiting, m);
    if (!candidate || candidate->peak > budget_) continue;
    const double extra = extra_s(waiting, m);
    if (start_s - now_s + extra >= least) continue;  // cannot beat waiting, whatever its delay
    if (const auto shift = solver_.solve(start_s, effective_budget(), *candidate, beside_)) {
      least = std::min(least, start_s - now_s + std::max(*shift, 0.0) + extra);
    }
  }
  return least;
}

std::size_t scrooge_policy::weigh_the_next_in_line(job_id job, const job_state& state, double now_s,
                                                   double running_end_s, std::size_t best,
                                                   std::optional<double>& best_shift,
                                                   double best_cost, double wait_share) {
  // The choice so far is the deciding job's cheapest start. It may leave the job next in line
  // no room: two RHN at b128 under 1.25x one's peak took turns, each starting its plain
  // iteration (the quickest alone), where a plan of each would have run side by side. So the
  // delay a start adds to that job's own least cost is part of the start's price, and another
  // variant may then be cheaper. Only the next job in line (the one waiting longest), and only
  // when the cheapest start delays it, so that a decision among many jobs stays a handful of
  // TimeShifts: one per variant of each of the two jobs.
  // Its delay counts only by the share of the device the two would have left each other: where
  // each fills it alone, running them together gains nothing, and a plan's extra time is lost.
  const auto waiting_at = next_in_line();
  if (!waiting_at) return best;
  const double share = free_share(state, jobs_.at(others_ids_[*waiting_at]));
  if (share <= 0) return best;
  const double start_s = now_s + std::max(*best_shift, 0.0);
  const double if_idle = waiting_cost(*waiting_at, job, nullptr, now_s, now_s, running_end_s);
  const double beside_best =
      waiting_cost(*waiting_at, job, curve_of(state, best).get(), start_s, now_s, running_end_s);
  if (beside_best <= if_idle) return best;
  double best_total = best_cost + share * (beside_best - if_idle);
  const std::size_t count = state.variants.size();
  for (std::size_t k = 0; k < count; ++k) {
    const auto& curve = curve_of(state, k);
    if (k == best || !curve || curve->peak > budget_) continue;
    const double extra = extra_s(state, k);
    if (extra >= best_total) continue;
    const auto shift = k < shifts_.size() ? shifts_[k] : shift_for(job, *curve, now_s);
    if (!shift) continue;  // no start before an iteration ends
    const double wait = std::max(*shift, 0.0);
    if (wait_share * wait + extra >= best_total) continue;
    const double total =
        wait_share * wait + extra +
        share * (waiting_cost(*waiting_at, job, curve.get(), now_s + wait, now_s, running_end_s) -
                 if_idle);
    if (total < best_total) {
      best = k;
      best_shift = shift;
      best_total = total;
    }
  }
  return best;
}

double scrooge_policy::free_share(const job_state& one, const job_state& other) {
  const auto speed = [](const job_state& state) {
    return state.stats.stretch > 0 ? 1 / state.stats.stretch : 1.0;
  };
  return std::clamp(speed(one) + speed(other) - 1, 0.0, 1.0);
}

double scrooge_policy::share_beside_running(job_id job, const job_state& state) const {
  double least = 1;
  for (const auto& [id, other] : jobs_) {
    if (id != job && other.running) least = std::min(least, free_share(state, other));
  }
  return least;
}

void scrooge_policy::count_time_beside(double now_s) {
  const double since = std::max(now_s - last_event_s_, 0.0);
  last_event_s_ = std::max(last_event_s_, now_s);
  const auto running = std::count_if(jobs_.begin(), jobs_.end(),
                                     [](const auto& entry) { return entry.second.running; });
  if (running < 2 || since <= 0) return;
  for (auto& [id, state] : jobs_) {
    if (state.running) state.beside_s += since;
  }
}

void scrooge_policy::learn_stretch(job_state& state, std::size_t k, double length_s) {
  if (k >= state.alone_s.size() || length_s <= 0) return;
  if (state.beside_s <= 0) {
    state.alone_s[k] = length_s;
    return;
  }
  if (state.beside_s < least_share_beside * length_s) return;
  // Alone it would have taken alone_s; the part it ran alone did length - beside of that work,
  // so the time beside did the rest, stretched by beside over that rest.
  const double work_beside = state.alone_s[k] - (length_s - state.beside_s);
  const double stretch = work_beside * most_stretch <= state.beside_s
                             ? most_stretch
                             : std::clamp(state.beside_s / work_beside, 1.0, most_stretch);
  auto& learned = state.stats.stretch;
  learned = learned > 0 ? (learned + stretch) / 2 : stretch;
}

bool scrooge_policy::waits_to_run_alone(job_id job, const job_state& state) const {
  return (runs_alone(state) || state.trial_wanted != 0) && !state.running && state.first_ask_s &&
         (state.admitted || admits(job)) && fits_beside_idle_others(job, state);
}

bool scrooge_policy::fits_beside_idle_others(job_id job, const job_state& state) const {
  if (state.restart_need == 0) return true;
  std::lock_guard lock(claims_mutex_);
  // Waiting helps only while another built job goes on, and leaves in the end: one mid-
  // iteration, or one that could start (else each would wait for the other, and no event
  // comes). When none does, this one tries, and fails for good if it cannot fit.
  const bool another_goes_on = std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
    return entry.first != job &&
           (entry.second.running || could_start_alone(entry.first, entry.second));
  });
  return !another_goes_on || fits_beside(idle_held_except(job), state.restart_need, budget_);
}

std::size_t scrooge_policy::idle_held_except(job_id left_out) const {
  std::size_t idle = 0;
  for (const auto& [id, other] : jobs_) {
    if (id != left_out) idle += idle_held(id, other);
  }
  return idle;
}

bool scrooge_policy::could_start_alone(job_id job, const job_state& state) const {
  // Under the largest budget: one that waits for a lowered budget to come back goes on then.
  return state.admitted && !state.running && state.restart_need == 0 &&
         fits_beside(idle_held_except(job), least_peak(state), largest_budget_);
}

decision scrooge_policy::wait_for_event(job_state& state) {
  state.stats.event_waits += 1;
  state.asked_while_blocked = true;
  return decision::wait_for_event();
}

void scrooge_policy::on_iteration_start(job_id job, double now_s) {
  count_time_beside(now_s);
  auto& state = jobs_.at(job);
  state.running = true;
  state.beside_s = 0;
  state.admitted = true;
  state.started_s = now_s;
  if (state.asked_while_blocked) state.stats.delayed += 1;
  if (state.shifted_from_s) state.stats.total_shift_s += now_s - *state.shifted_from_s;
  state.asked_while_blocked = false;
  state.first_ask_s.reset();
  state.shifted_from_s.reset();
  if (anyone_running_except(job)) state.stats.shared_starts += 1;
  state.running_variant = state.variants.empty() ? 0 : state.chosen;
  state.trial = state.running_variant > 0 && !state.measured[state.running_variant];
  if (state.running_variant > 0) {
    state.stats.planned += 1;
    state.stats.plan_extra_s += state.offered_s[state.running_variant] - state.offered_s.front();
  }
  // A job running alone claims what it takes as it goes: nobody else is there to wait for it.
  std::lock_guard lock(claims_mutex_);
  claims_.start(
      job, runs_alone(state) || state.trial ? nullptr : curve_of(state, state.running_variant));
}

bool scrooge_policy::missed_prediction(const usage_curve& predicted,
                                       const usage_curve& observed) const {
  // Memory, not time: the claims make a slower iteration (compute shared with the others) cost
  // waiting only, while memory beyond the prediction is what Zico's fallback is about.
  const double slack = 1 + options_.fallback_threshold;
  return static_cast<double>(observed.peak()) > slack * static_cast<double>(predicted.peak());
}

void scrooge_policy::on_iteration_end(job_id job, const iteration_report& report, double now_s) {
  count_time_beside(now_s);
  auto& state = jobs_.at(job);
  state.running = false;
  std::lock_guard lock(claims_mutex_);
  if (report.restarted) {
    // It let go while every iteration beside it waited: its curve misled the claims (or the
    // budget fell under them). It runs again alone, as after a missed prediction; what it
    // measured stops at the cut and teaches nothing.
    const bool informed = state.now == phase::informed;
    state.restart_need = restart_need_after(report.held.peak(), state.restart_need, budget_);
    claims_.end(job);
    if (informed) {
      state.now = phase::fallback;
      state.stats.fallbacks += 1;
    }
    state.trial = false;
    return;
  }
  state.stats.iterations += 1;
  state.restart_need = 0;
  usage_curve observed = report.held;
  if (observed.duration_s <= 0) observed.duration_s = report.end_s - report.start_s;
  const bool exceeded = claims_.exceeded_claim(job);
  claims_.end(job);
  const auto& predicted = curve_of(state, state.running_variant);
  switch (state.now) {
    case phase::profiling:
      // An iteration that ended holding more than it began with made state that lives on (the
      // optimizer's, on a first step): the next one holds that throughout, so this one predicts
      // it too low, and the next is profiled alone as well.
      if (!grew_for_good(observed) || state.stats.iterations >= max_profiling_iterations) {
        state.now = phase::informed;
      }
      break;
    case phase::informed:
      informed_iterations_ += 1;
      if (predicted && (exceeded || missed_prediction(predicted->curve, observed))) {
        state.now = phase::fallback;
        state.stats.fallbacks += 1;
      }
      break;
    case phase::fallback:
      if (!predicted || !missed_prediction(predicted->curve, observed)) {
        state.now = phase::informed;
      }
      break;
  }
  // Feedback: the latest lifespans, measured beside the others, predict the next iteration of
  // the same variant.
  auto measured = std::make_shared<const indexed_curve>(std::move(observed));
  if (state.running_variant < state.measured.size()) state.measured[state.running_variant] = true;
  // A variant that had to swap on demand did not fit beside what the others held: its cost is
  // the length it took, copies included (a plain VGG-16 beside two idle jobs: 2.28 s against
  // 0.24 s predicted, where a plan ran in 0.31 s), until an iteration of it runs without.
  if (const auto k = state.running_variant; k < state.variant_s.size()) {
    state.variant_s[k] = report.swapped_on_demand_bytes > 0
                             ? std::max(state.offered_s[k], report.end_s - report.start_s)
                             : state.offered_s[k];
    // Copies on demand stretch an iteration whoever runs beside it.
    if (report.swapped_on_demand_bytes == 0) learn_stretch(state, k, now_s - state.started_s);
  }
  state.trial = false;
  if (state.running_variant == 0) {
    state.profile = std::move(measured);
  } else {
    state.variants[state.running_variant] = std::move(measured);
  }
}

bool scrooge_policy::try_reserve(job_id job, std::size_t bytes) {
  std::lock_guard lock(claims_mutex_);
  auto& borrows = borrows_[job];
  const bool granted = claims_.try_reserve(job, bytes);
  // A refused job asks again on every return and every few milliseconds until it is granted or
  // gives up (runtime::region_waiter): one wait however many refusals it took.
  if (!granted && !borrows.refused) ++borrows.waits;
  borrows.refused = !granted;
  return granted;
}

void scrooge_policy::cancel(job_id job, std::size_t bytes) {
  std::lock_guard lock(claims_mutex_);
  borrows_[job].refused = false;
  claims_.cancel(job, bytes);
}

void scrooge_policy::returned(job_id job, std::size_t bytes) {
  std::lock_guard lock(claims_mutex_);
  claims_.returned(job, bytes);
}

bool scrooge_policy::others_will_move(job_id job) {
  std::lock_guard lock(claims_mutex_);
  return claims_.others_will_move(job);
}

scrooge_job_stats scrooge_policy::stats(job_id job) const {
  if (const auto found = jobs_.find(job); found != jobs_.end()) {
    auto stats = found->second.stats;
    std::lock_guard lock(claims_mutex_);
    if (const auto borrows = borrows_.find(job); borrows != borrows_.end()) {
      stats.borrow_waits = borrows->second.waits;
    }
    return stats;
  }
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
          {"shared_starts", count(s.shared_starts)},
          {"borrow_waits", count(s.borrow_waits)},
          {"plans", count(s.plans)},
          {"planned", count(s.planned)},
          {"plan_extra_s", s.plan_extra_s}};
}

}  // namespace

std::vector<policy_statistic> scrooge_policy::job_statistics(job_id job) const {
  const auto s = stats(job);
  auto statistics = statistics_of(s);
  statistics.push_back({"stretch", s.stretch});
  return statistics;
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
    total.borrow_waits += s.borrow_waits;
    total.plans += s.plans;
    total.planned += s.planned;
    total.plan_extra_s += s.plan_extra_s;
  };
  for (const auto& [id, state] : jobs_) add(stats(id));
  for (const auto& [id, s] : departed_) add(s);
  auto statistics = statistics_of(total);
  statistics.push_back({"effective_budget_bytes", static_cast<double>(effective_budget())});
  std::lock_guard lock(claims_mutex_);
  statistics.push_back({"borrows_let_through", static_cast<double>(claims_.insisted())});
  return statistics;
}

}  // namespace tandem::schedule
