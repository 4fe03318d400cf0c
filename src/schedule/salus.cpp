#include "tandem/schedule/salus.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <tuple>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/admission.hpp"

namespace tandem::schedule {

namespace {

constexpr double unknown_time = std::numeric_limits<double>::infinity();

/// What an iteration report says the job needs: what it held once the iteration was over, and
/// the most the iteration took on top of that.
std::optional<memory_need> measured_need(const iteration_report& report) {
  const usage_curve& held = report.held;
  if (held.steps.empty() && held.held_at_start == 0) return std::nullopt;  // not measured
  const std::size_t persistent = held.held_at_end();
  const std::size_t peak = held.peak();
  return memory_need{persistent, peak > persistent ? peak - persistent : 0};
}

memory_need larger_of(const memory_need& a, const memory_need& b) {
  return {std::max(a.persistent, b.persistent), std::max(a.ephemeral, b.ephemeral)};
}

}  // namespace

std::string_view to_string(salus_discipline discipline) {
  switch (discipline) {
    case salus_discipline::srtf:
      return "srtf";
    case salus_discipline::pack:
      return "pack";
    case salus_discipline::fair:
      return "fair";
  }
  return "salus";
}

policy_entry salus_entry(salus_discipline discipline) {
  const auto description = [&]() -> std::string {
    switch (discipline) {
      case salus_discipline::srtf:
        return "Salus's shortest remaining time first: one lane, preemptive at iteration "
               "boundaries";
      case salus_discipline::pack:
        return "Salus's PACK: as many lanes as fit; a lane's first job runs until it leaves";
      case salus_discipline::fair:
        return "Salus's FAIR: lanes as pack; within a lane the least device time goes next";
    }
    return {};
  }();
  return {std::string(to_string(discipline)),
          description,
          {},
          [discipline](const policy_context& context) {
            return std::make_unique<salus_policy>(context.budget_bytes, discipline);
          }};
}

salus_policy::salus_policy(std::size_t budget_bytes, salus_discipline discipline)
    : budget_(budget_bytes),
      largest_budget_(budget_bytes),
      discipline_(discipline),
      lanes_(budget_bytes,
             discipline == salus_discipline::srtf ? 1 : std::numeric_limits<std::size_t>::max()) {}

salus_policy::job_state& salus_policy::state_of(job_id job, const char* call) {
  const auto found = jobs_.find(job);
  TANDEM_EXPECTS(found != jobs_.end(), usage_error,
                 std::string(name()) + ": " + call + " for job " + std::to_string(job) +
                     ", which has not arrived or has left");
  return found->second;
}

void salus_policy::on_arrival(const job_info& job, double now_s) {
  TANDEM_EXPECTS(!jobs_.contains(job.id), usage_error,
                 std::string(name()) + ": job " + std::to_string(job.id) + " arrived twice");
  now_s_ = now_s;
  job_state s;
  s.info = job;
  s.need = job.need;  // else one like it measured before lends its figures in admit_waiting
  jobs_.emplace(job.id, std::move(s));
  // Kept in order of (arrival, id): admission and probes go first come, first served.
  const auto later = std::find_if(arrival_order_.begin(), arrival_order_.end(), [&](job_id other) {
    const auto& o = jobs_.at(other).info;
    return std::tie(o.arrival_s, o.id) > std::tie(job.arrival_s, job.id);
  });
  arrival_order_.insert(later, job.id);
  admit_waiting();
}

void salus_policy::on_departure(job_id job, double now_s) {
  now_s_ = now_s;
  auto& s = state_of(job, "on_departure");
  if (s.laned) lanes_.release(job);
  departed_[job] = s.stats;
  jobs_.erase(job);
  std::erase(arrival_order_, job);
  admit_waiting();
}

void salus_policy::on_iteration_start(job_id job, double now_s) {
  now_s_ = now_s;
  auto& s = state_of(job, "on_iteration_start");
  s.running = true;
  s.built = true;
  s.asking = false;
  if (!s.first_start_s) s.first_start_s = now_s;
  if (const auto lane = lanes_.lane_of(job)) {
    // The lane's previous job wanted to go on (a training job always does) unless it left:
    // this start preempted it at its iteration boundary.
    auto& last = last_in_lane_[*lane];
    if (last && *last != job) {
      const auto previous = jobs_.find(*last);
      if (previous != jobs_.end() && !previous->second.info.inference) {
        ++previous->second.stats.preemptions;
      }
    }
    last = job;
  }
  s.running_variant = s.offered_peak.empty() ? 0 : s.chosen;
  if (s.running_variant > 0) ++s.stats.planned;
  if (s.solo) {
    ++s.stats.solo_iterations;
    if (!s.need) ++probes_;
  }
  s.reason.clear();
}

void salus_policy::on_iteration_end(job_id job, const iteration_report& report, double now_s) {
  now_s_ = now_s;
  auto& s = state_of(job, "on_iteration_end");
  s.running = false;
  s.solo = false;
  if (report.restarted) {
    // Cut short (policy_driver.hpp, "Memory waits"): its curve ends with the borrow it was
    // refused, so it needs at least that much beyond what it held at its start. A probe thus
    // learns enough to wait for room instead of starting beside memory that does not leave.
    const auto& held = report.held;
    const memory_need least{held.held_at_start, held.peak() - held.held_at_start};
    s.need = s.need ? larger_of(*s.need, least) : least;
    admit_waiting();
    return;
  }
  const double duration = std::max(0.0, report.end_s - report.start_s);
  s.stats.service_s += duration;
  ++s.iterations_done;
  // The first iteration builds the optimizer's state and warms caches: the time per iteration
  // comes from the later ones once there are any.
  if (s.iterations_done == 1) {
    s.first_iteration_s = duration;
  } else {
    s.measured_s += duration;
  }
  const std::size_t ran = s.running_variant;
  if (const auto need = measured_need(report); need && ran == 0) {
    // The largest seen: an iteration a little larger than the last one must still fit its lane.
    s.need = s.need && s.measured ? larger_of(*s.need, *need) : *need;
    s.measured = true;
  } else if (need && ran < s.measured_ephemeral.size()) {
    // Under a plan: its ephemeral need is that plan's alone (the largest seen under it), never
    // the plain one's; its persistent memory is the job's, whichever variant ran.
    auto& ephemeral = s.measured_ephemeral[ran];
    ephemeral = std::max(ephemeral.value_or(0), need->ephemeral);
    if (s.need) {
      s.need->persistent = std::max(s.need->persistent, need->persistent);
    } else {
      // A probe that ran planned: its plain ephemeral need is the offer's until one is measured.
      s.need = memory_need{need->persistent, s.offered_ephemeral.front()};
    }
  }
  if (!s.info.signature.empty() && s.need) {
    // Measured or given, the job's need is what a job like it needs (the largest seen); a
    // default-made entry would lend its twins a need of zero.
    const auto [entry, fresh] = by_signature_.try_emplace(s.info.signature);
    auto& known = entry->second;
    known.need = fresh ? *s.need : larger_of(known.need, *s.need);
    known.iteration_s = iteration_s(s);
  }
  if (s.laned && s.need) {
    if (lanes_.lane_holding(job)->size < need_of(s, s.variant).ephemeral) {
      // It outgrew its lane: admitted again below with its new need, at this boundary.
      lanes_.release(job);
      s.laned = false;
      s.variant = 0;
      ++s.stats.lane_moves;
    }
  }
  admit_waiting();
}

void salus_policy::on_budget_change(std::size_t budget_bytes, double now_s) {
  now_s_ = now_s;
  budget_ = budget_bytes;
  largest_budget_ = std::max(largest_budget_, budget_bytes);
  admit_waiting();
}

std::size_t salus_policy::variant_count(const job_state& s) {
  return std::max<std::size_t>(1, s.offered_peak.size());
}

memory_need salus_policy::need_of(const job_state& s, std::size_t k) {
  if (k == 0 || k >= s.offered_ephemeral.size()) return *s.need;
  return {s.need->persistent, s.measured_ephemeral[k].value_or(s.offered_ephemeral[k])};
}

std::optional<std::size_t> salus_policy::variant_alone(const job_state& s) const {
  const std::size_t count = variant_count(s);
  const std::size_t resident = resident_bytes();
  if (!s.need) {
    // A probe, not built yet: its whole predicted peak beside what the built jobs hold.
    if (count == 1) return 0;
    for (std::size_t k = 0; k < count; ++k) {
      if (fits_beside(resident, s.offered_peak[k], budget_)) return k;
    }
    return count - 1;
  }
  for (std::size_t k = 0; k < count; ++k) {
    const memory_need need = need_of(s, k);
    if (fits_beside(resident + (s.built ? 0 : need.persistent), need.ephemeral, budget_)) return k;
  }
  return std::nullopt;
}

double salus_policy::iteration_s(const job_state& s) {
  if (s.iterations_done >= 2) return s.measured_s / static_cast<double>(s.iterations_done - 1);
  if (s.iterations_done == 1) return s.first_iteration_s;
  return unknown_time;
}

double salus_policy::remaining_s(const job_state& s, double now_s) const {
  double per_iteration = iteration_s(s);
  if (per_iteration == unknown_time && !s.info.signature.empty()) {
    if (const auto known = by_signature_.find(s.info.signature); known != by_signature_.end()) {
      per_iteration = known->second.iteration_s;
    }
  }
  double left = unknown_time;
  if (s.info.iterations && per_iteration != unknown_time) {
    const auto count = std::max<std::int64_t>(0, *s.info.iterations - s.iterations_done);
    left = static_cast<double>(count) * per_iteration;
  }
  if (s.info.duration_s) {
    const double elapsed = s.first_start_s ? now_s - *s.first_start_s : 0;
    left = std::min(left, std::max(0.0, *s.info.duration_s - elapsed));
  }
  return left;
}

bool salus_policy::anyone_running() const {
  return std::any_of(jobs_.begin(), jobs_.end(),
                     [](const auto& entry) { return entry.second.running; });
}

bool salus_policy::someone_solo() const {
  return std::any_of(jobs_.begin(), jobs_.end(),
                     [](const auto& entry) { return entry.second.running && entry.second.solo; });
}

std::size_t salus_policy::resident_bytes() const {
  std::size_t held = 0;
  for (const auto& [id, s] : jobs_) {
    if (s.built && s.need) held += s.need->persistent;
  }
  return held;
}

std::size_t salus_policy::committed_bytes() const {
  std::size_t committed = resident_bytes();
  for (const auto& [id, s] : jobs_) {
    if (s.running && s.need) committed += need_of(s, s.running_variant).ephemeral;
  }
  return committed;
}

bool salus_policy::fits_now(const job_state& s) const {
  // Its persistent memory counts once it is built; before, its first iteration builds it.
  const memory_need own = need_of(s, s.variant);
  const std::size_t need = own.ephemeral + (s.built ? 0 : own.persistent);
  return fits_beside(committed_bytes(), need, budget_);
}

bool salus_policy::probing(const std::string& signature) const {
  if (signature.empty()) return false;
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
    const job_state& s = entry.second;
    return s.running && s.solo && !s.measured && s.info.signature == signature;
  });
}

bool salus_policy::probe_may_go() const {
  if (resident_bytes() == 0) return true;  // nothing held: the whole budget is its own
  // Beside memory held this is a bet: the probe's need is unknown until it has run, and one that
  // needs more than is left waits alone for memory that stays held (fair, the 100-job trace at
  // 8 GiB: vgg16's first iteration, 7.44 GiB beside 640 MiB). The driver then restarts it, and
  // its restart tells its least need (on_iteration_end): it waits for room like any job. Probing
  // only with nothing held would never lose the bet, but then no two jobs of kinds not seen yet
  // would share the device (no SRTF preemption for a newcomer of a new kind).
  // Only while a job as large as the largest seen would be admitted now, so that a probed job
  // does not wait outside the lanes holding its persistent memory.
  // A job's need is the one it holds its lane with, else the first of its variants that could fit
  // at all (plain without plans); a kind that could never fit plain is no measure.
  memory_need largest;
  for (const auto& [id, s] : jobs_) {
    if (!s.need) continue;
    std::size_t k = s.laned ? s.variant : 0;
    while (!s.laned && k + 1 < variant_count(s) &&
           !fits_beside(need_of(s, k).persistent, need_of(s, k).ephemeral, largest_budget_)) {
      ++k;
    }
    largest = larger_of(largest, need_of(s, k));
  }
  for (const auto& [signature, known] : by_signature_) {
    if (fits_beside(known.need.persistent, known.need.ephemeral, largest_budget_)) {
      largest = larger_of(largest, known.need);
    }
  }
  auto trial = lanes_;
  try {
    return trial.admit(std::numeric_limits<job_id>::max(), largest.persistent, largest.ephemeral)
        .has_value();
  } catch (const config_error&) {
    return false;  // the largest need seen exceeds the capacity the lanes have now
  }
}

bool salus_policy::goes_out_of_turn(const lane& l, job_id job) const {
  // Lanes admitted before a job was built outside them need not hold its persistent memory: then
  // neither the lanes' next jobs nor the job outside (alone, beside every job's persistent memory)
  // may fit, while another member would. It goes rather than nobody; memory frees as jobs leave.
  return !anyone_running() && !a_lane_can_start() && next_in_lane(l, true) == job;
}

bool salus_policy::a_lane_member_fits() const {
  return std::any_of(lanes_.lanes().begin(), lanes_.lanes().end(),
                     [&](const lane& l) { return next_in_lane(l, true).has_value(); });
}

bool salus_policy::a_lane_can_start() const {
  // Only a lane's next job may start in it: another member that would fit does not count, or
  // a job outside the lanes would wait for it while the next one waits for memory (srtf on the
  // 100-job trace at 8 GiB: 41 jobs failed as a stall).
  return std::any_of(lanes_.lanes().begin(), lanes_.lanes().end(), [&](const lane& l) {
    const auto next = next_in_lane(l);
    return next && fits_now(jobs_.at(*next));
  });
}

std::optional<job_id> salus_policy::next_solo() const {
  // A lane whose next job cannot start now is no lane to wait for: a job admitted before
  // another was built outside the lanes (a probe whose need came out larger than any seen) may
  // no longer fit beside that one's persistent memory, and the two would wait for each other.
  const bool lane_can_start = anyone_running() || a_lane_can_start();
  for (const auto id : arrival_order_) {
    const job_state* s = &jobs_.at(id);
    if (s->running || s->laned || !s->asking) continue;
    if (!s->need) {
      // A probe: its need is unknown until it has run. A job like one being probed waits for
      // that probe's figures instead (a batch of identical jobs probes once).
      if (probing(s->info.signature)) continue;
      if (probe_may_go()) return s->info.id;
    } else if (s->built && !lane_can_start) {
      // Built but without a lane, and no lane left to wait for: alone, beside every job's
      // persistent memory. While a lane's job can start it waits to be admitted when one leaves.
      // Plain when that fits, else the first plan that does.
      if (variant_alone(*s)) return s->info.id;
    }
  }
  if (lane_can_start) return std::nullopt;
  // Nothing runs and nothing can start by the counted figures, not even a lane's member out of
  // turn: every built job outside the lanes needs more than is left beside the others'
  // persistent memory (iterations that outgrew their lanes by a few MiB: the figures are each
  // job's largest iteration seen, and a planned job's own swaps make them overstate). Waiting
  // would fail every job, so the built one needing least runs alone: the pool's budget stays
  // hard, and its memory waits decide (policy_driver.hpp, "Memory waits").
  if (a_lane_member_fits()) return std::nullopt;  // it goes out of turn instead
  const job_state* least = nullptr;
  const auto least_ephemeral = [](const job_state& s) {
    return need_of(s, variant_count(s) - 1).ephemeral;
  };
  for (const auto id : arrival_order_) {
    const job_state& s = jobs_.at(id);
    if (s.running || s.laned || !s.asking || !s.built || !s.need) continue;
    if (least == nullptr || least_ephemeral(s) < least_ephemeral(*least)) least = &s;
  }
  if (least == nullptr) return std::nullopt;
  return least->info.id;
}

std::optional<job_id> salus_policy::next_in_lane(const lane& l, bool fitting_only) const {
  // Training jobs always want the device (they ask again as soon as an iteration ends); an
  // inference job only while a request waits.
  const job_state* request = nullptr;
  const job_state* best = nullptr;
  double best_key = 0;
  for (const auto member : l.jobs) {
    const auto found = jobs_.find(member);
    if (found == jobs_.end()) continue;
    const job_state& s = found->second;
    if (s.running || (fitting_only && !fits_now(s))) continue;
    if (s.info.inference) {
      if (s.asking && (request == nullptr || s.asking_since_s < request->asking_since_s)) {
        request = &s;
      }
      continue;
    }
    double key = 0;  // pack: the lane's order alone
    if (discipline_ == salus_discipline::fair) key = s.stats.service_s;
    if (discipline_ == salus_discipline::srtf) {
      // A job whose time per iteration nobody has measured runs one iteration first.
      key = remaining_s(s, now_s_);
      if (key == unknown_time) key = -1;
    }
    if (best == nullptr || key < best_key) {
      best = &s;
      best_key = key;
    }
  }
  if (request != nullptr) return request->info.id;
  if (best != nullptr) return best->info.id;
  return std::nullopt;
}

void salus_policy::admit_waiting() {
  // Lane space given up by departures and shrunken needs returns here (auto defragmentation at
  // an iteration boundary); moving a lane copies nothing, its memory is free between iterations.
  lanes_.defragment();
  // Jobs that arrived while one like them was being probed take its figures.
  for (auto& [id, s] : jobs_) {
    if (s.need || s.info.signature.empty()) continue;
    if (const auto known = by_signature_.find(s.info.signature); known != by_signature_.end()) {
      s.need = known->second.need;
    }
  }
  // Built jobs outside the lanes hold persistent memory that the safety condition must count.
  std::size_t outside = 0;
  for (const auto& [id, s] : jobs_) {
    if (s.built && !s.laned && s.need) outside += s.need->persistent;
  }
  lanes_.set_capacity(budget_ > outside ? budget_ - outside : 0);
  for (const auto id : arrival_order_) {
    auto& s = jobs_.at(id);
    if (s.laned || !s.need || s.running) continue;
    const memory_need need = *s.need;
    const std::size_t count = variant_count(s);
    const auto exceeds = [](const memory_need& wanted, std::size_t capacity) {
      return !fits_beside(wanted.persistent, wanted.ephemeral, capacity);
    };
    // Impossible only when no way to run it fits the largest budget on its own.
    s.impossible = true;
    for (std::size_t k = 0; k < count && s.impossible; ++k) {
      s.impossible = exceeds(need_of(s, k), largest_budget_);
    }
    if (s.impossible) continue;
    const std::size_t lanes_before = lanes_.lanes().size();
    // Built jobs' persistent memory is already counted in `outside`: the lanes see it once.
    if (s.built) lanes_.set_capacity(lanes_.capacity() + need.persistent);
    // Plain first, as without plans; where plain would wait, the first plan whose need is
    // admitted (its lane sized by the plan's ephemeral need). Beyond what the lanes can hold now
    // (a lowered budget, jobs outside the lanes): that variant is not tried.
    std::optional<std::size_t> lane;
    std::size_t variant = 0;
    for (std::size_t k = 0; k < count; ++k) {
      const memory_need wanted = need_of(s, k);
      if (exceeds(wanted, lanes_.capacity())) continue;
      lane = lanes_.admit(s.info.id, wanted.persistent, wanted.ephemeral);
      if (lane) {
        variant = k;
        break;
      }
    }
    if (lane) {
      s.laned = true;
      s.variant = variant;
      s.reason.clear();
      ++admissions_;
      if (variant > 0) {
        ++plan_admissions_;
        ++s.stats.plan_admissions;
      }
      if (lanes_.lanes().size() < lanes_before) ++reorganizations_;
      outside -= s.built ? need.persistent : 0;
      continue;
    }
    if (s.built) lanes_.set_capacity(lanes_.capacity() - need.persistent);
    if (s.reason.empty()) ++refusals_;
    // Refused again at every event while it waits: the words only when the figures change.
    const std::array<std::size_t, 5> figures{need.persistent, need.ephemeral,
                                             lanes_.persistent_total() + outside,
                                             lanes_.lanes_total(), budget_};
    if (s.reason.empty() || figures != s.refused_figures) {
      s.refused_figures = figures;
      s.reason = "waiting for memory: needs " + format_bytes(need.persistent) + " persistent + " +
                 format_bytes(need.ephemeral) + " per iteration, while the admitted jobs keep " +
                 format_bytes(figures[2]) + " persistent and " + format_bytes(figures[3]) +
                 " of lanes out of a budget of " + format_bytes(budget_) +
                 (count > 1 ? " (" + format_bytes(need_of(s, count - 1).ephemeral) +
                                  " per iteration under its smallest plan)"
                            : std::string()) +
                 "; it is admitted when memory frees";
    }
  }
  most_lanes_ = std::max(most_lanes_, lanes_.lanes().size());
}

decision salus_policy::may_start(job_id job, double now_s) {
  now_s_ = now_s;
  auto& s = state_of(job, "may_start");
  TANDEM_EXPECTS(
      !s.running, usage_error,
      std::string(name()) + ": job '" + s.info.name + "' asked to start while its iteration runs");
  if (s.impossible) {
    TANDEM_FAIL(config_error,
                std::string(name()) + ": job '" + s.info.name + "' needs " +
                    format_bytes(s.need->persistent) + " persistent + " +
                    format_bytes(s.need->ephemeral) + " per iteration" +
                    (variant_count(s) > 1
                         ? " (" + format_bytes(need_of(s, variant_count(s) - 1).ephemeral) +
                               " under its smallest plan)"
                         : std::string()) +
                    ", more than the budget of " + format_bytes(largest_budget_) +
                    " on its own; it can never run: raise the budget or shrink the job (a "
                    "smaller batch or model)");
  }
  if (!s.asking) {
    s.asking = true;
    s.asking_since_s = now_s;
  }
  const auto wait = [&](std::string reason) {
    if (!reason.empty() || s.laned) s.reason = std::move(reason);
    return decision::wait_for_event();
  };
  if (someone_solo()) return wait(s.laned ? "" : "another job runs alone (measuring its memory)");
  // Probes and jobs outside the lanes go alone, before anyone starts again: the next boundary
  // of every lane is theirs (SRTF's preemption of a running job by a newcomer starts here).
  if (const auto solo = next_solo()) {
    if (*solo != job) return wait(s.laned ? "" : s.reason);
    if (anyone_running()) return wait("waits for the running iterations to end to run alone");
    s.solo = true;
    s.chosen = variant_alone(s).value_or(variant_count(s) - 1);  // else its smallest plan
    return decision::start();
  }
  if (!s.laned) {
    if (!s.need && s.reason.empty()) {
      ++refusals_;
      s.reason =
          "waiting for memory: its need is unknown until it runs alone, and the admitted "
          "jobs keep " +
          format_bytes(resident_bytes()) + " persistent and " + format_bytes(lanes_.lanes_total()) +
          " of lanes out of a budget of " + format_bytes(budget_) + "; it runs when memory frees";
    }
    return decision::wait_for_event();
  }
  const lane& l = *lanes_.lane_holding(job);
  const bool lane_busy = std::any_of(l.jobs.begin(), l.jobs.end(), [&](job_id member) {
    const auto found = jobs_.find(member);
    return found != jobs_.end() && found->second.running;
  });
  if (lane_busy) return wait("");
  if (next_in_lane(l) != job && !goes_out_of_turn(l, job)) return wait("");
  // After a reorganization the iterations of lanes merged away may still run: start only once
  // everything held and running leaves room (the budget is never promised twice).
  if (!fits_now(s)) return wait("");
  s.chosen = s.variant;  // the variant it holds its lane under
  return decision::start();
}

void salus_policy::offer_variants(job_id job, std::vector<footprint_variant> variants) {
  auto& s = state_of(job, "offer_variants");
  s.offered_peak.clear();
  s.offered_ephemeral.clear();
  s.measured_ephemeral.clear();
  if (variants.size() > 1) {  // the plain iteration alone is no choice
    for (const auto& variant : variants) {
      const std::size_t peak = variant.held.peak();
      const std::size_t start = variant.held.held_at_start;
      s.offered_peak.push_back(peak);
      s.offered_ephemeral.push_back(peak > start ? peak - start : 0);
    }
    s.measured_ephemeral.resize(variants.size());
  }
  if (s.laned && s.variant >= variant_count(s)) {
    // Its lane's plan is no longer offered: admitted again with what is.
    lanes_.release(job);
    s.laned = false;
    ++s.stats.lane_moves;
  }
  if (s.variant >= variant_count(s)) s.variant = 0;
  s.chosen = 0;
  // The executor offers plans right after the arrival: a job refused then, which a plan now
  // admits before it ever asked, never waited for memory.
  const bool refused_unasked = !s.laned && !s.reason.empty() && !s.asking && !s.built;
  admit_waiting();
  if (refused_unasked && jobs_.at(job).laned) --refusals_;
}

std::size_t salus_policy::chosen_variant(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? 0 : found->second.chosen;
}

std::string salus_policy::waiting_reason(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? std::string() : found->second.reason;
}

std::vector<policy_statistic> salus_policy::job_statistics(job_id job) const {
  const salus_job_stats* stats = nullptr;
  if (const auto found = jobs_.find(job); found != jobs_.end()) stats = &found->second.stats;
  if (const auto found = departed_.find(job); found != departed_.end()) stats = &found->second;
  if (stats == nullptr) return {};
  return {{"service_s", stats->service_s},
          {"preemptions", static_cast<double>(stats->preemptions)},
          {"solo_iterations", static_cast<double>(stats->solo_iterations)},
          {"lane_moves", static_cast<double>(stats->lane_moves)},
          {"planned", static_cast<double>(stats->planned)},
          {"plan_admissions", static_cast<double>(stats->plan_admissions)}};
}

std::vector<policy_statistic> salus_policy::system_statistics() const {
  std::int64_t preemptions = 0;
  std::int64_t solo = 0;
  std::int64_t planned = 0;
  const auto add = [&](const salus_job_stats& stats) {
    preemptions += stats.preemptions;
    solo += stats.solo_iterations;
    planned += stats.planned;
  };
  for (const auto& [id, s] : jobs_) add(s.stats);
  for (const auto& [id, stats] : departed_) add(stats);
  return {{"lanes_most", static_cast<double>(most_lanes_)},
          {"admissions", static_cast<double>(admissions_)},
          {"reorganizations", static_cast<double>(reorganizations_)},
          {"probes", static_cast<double>(probes_)},
          {"admission_refusals", static_cast<double>(refusals_)},
          {"preemptions", static_cast<double>(preemptions)},
          {"solo_iterations", static_cast<double>(solo)},
          {"planned", static_cast<double>(planned)},
          {"plan_admissions", static_cast<double>(plan_admissions_)}};
}

}  // namespace tandem::schedule
