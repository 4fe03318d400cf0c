#include "tandem/schedule/nodegroup.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/admission.hpp"

namespace tandem::schedule {

namespace {

std::int64_t difference(std::size_t to, std::size_t from) {
  return static_cast<std::int64_t>(to) - static_cast<std::int64_t>(from);
}

std::vector<group_need> needs_of(const iteration_partition& partition) {
  std::vector<group_need> needs;
  for (const auto& group : partition.groups) {
    needs.push_back({group.held_peak - group.held_at_start,
                     difference(group.held_at_end, group.held_at_start), group.kind});
  }
  return needs;
}

}  // namespace

const option_table<nodegroup_options>& nodegroup_options::table() {
  static const auto table =
      option_table<nodegroup_options>("nodegroup")
          .bind("split_mib", &nodegroup_options::split_bytes, {.least = 0, .most = 1024 * 1024},
                "MiB",
                "net allocation per node group; 0: a quarter of the job's transient peak, at "
                "least its largest allocation",
                static_cast<double>(MiB))
          .bind("groups_per_phase", &nodegroup_options::groups_per_phase,
                {.least = 1, .most = 1024}, "", "node groups per phase for the automatic split")
          .bind("streams", &nodegroup_options::streams, {.least = 1, .most = 1024}, "",
                "node groups that run at once in a step (Waterwave: 2)")
          .bind("profile_iterations", &nodegroup_options::profile_iterations,
                {.least = 1, .most = 1e6}, "",
                "solo iterations that measure a job before its iteration is cut into groups");
  return table;
}

policy_entry nodegroup_entry() {
  return {"nodegroup",
          "Waterwave's NodeGroup pipeline: iterations cut into node groups, run in steps that "
          "pair one job's freeing groups with another's allocating ones",
          nodegroup_options::table().specs(), [](const policy_context& context) {
            return std::make_unique<nodegroup_policy>(
                context.budget_bytes, nodegroup_options::table().parse(context.options));
          }};
}

nodegroup_policy::nodegroup_policy(std::size_t budget_bytes, nodegroup_options options)
    : budget_(budget_bytes), options_(options) {
  TANDEM_EXPECTS(options_.streams >= 1, config_error,
                 "nodegroup: streams must be at least 1 (groups that run at once; Waterwave "
                 "uses 2)");
  TANDEM_EXPECTS(options_.groups_per_phase >= 1, config_error,
                 "nodegroup: groups_per_phase must be at least 1");
  TANDEM_EXPECTS(options_.profile_iterations >= 1, config_error,
                 "nodegroup: profile_iterations must be at least 1 (the solo iterations that "
                 "measure a job before it is pipelined)");
}

bool nodegroup_policy::pipelined(const job_state& job) {
  return job.learned.front().pipelined();
}

const nodegroup_policy::learned_groups* nodegroup_policy::stepping(const job_state& job) {
  const auto variant = job.next_group > 0 ? job.running_variant : 0;
  if (variant >= job.learned.size()) return nullptr;
  const auto& groups = job.learned[variant];
  return groups.pipelined() ? &groups : nullptr;
}

std::size_t nodegroup_policy::held_by(job_id id, const job_state& job) const {
  if (progress_ != nullptr) return progress_->progress(id).held_bytes;
  // Without a view of the jobs, what the plan predicts: its idle holding plus the groups done.
  const auto& needs =
      job.learned[job.running_variant < job.learned.size() ? job.running_variant : 0].needs;
  std::int64_t held = static_cast<std::int64_t>(job.idle_held);
  for (std::size_t g = 0; g < job.next_group && g < needs.size(); ++g) held += needs[g].net;
  return static_cast<std::size_t>(std::max<std::int64_t>(held, 0));
}

void nodegroup_policy::on_arrival(const job_info& job, double now_s) {
  TANDEM_EXPECTS(!jobs_.contains(job.id), usage_error,
                 "job " + std::to_string(job.id) + " arrived twice");
  auto& state = jobs_[job.id];
  state.info = job;
  state.arrival_rank = arrivals_++;
  state.ready_since_s = now_s;
  next_step(now_s);
}

void nodegroup_policy::on_departure(job_id job, double now_s) {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return;
  departed_[job] = found->second.stats;
  jobs_.erase(found);
  // A member that leaves mid-step is no longer waited for.
  barrier_.remove(job);
  next_step(now_s);
}

void nodegroup_policy::on_budget_change(std::size_t budget_bytes, double now_s) {
  budget_ = budget_bytes;
  next_step(now_s);
}

group_need nodegroup_policy::as_one_group(const offered_plan& plan, bool built) {
  // A job not built yet holds nothing: its first iteration takes the whole curve, and keeps
  // what the curve ends with.
  const auto rise = built ? plan.peak - plan.start : plan.peak;
  const auto net = built ? plan.net : static_cast<std::int64_t>(plan.start) + plan.net;
  return {rise, net, net > 0 ? group_kind::allocating : group_kind::freeing};
}

void nodegroup_policy::on_iteration_start(job_id job, double now_s) {
  auto& state = jobs_.at(job);
  state.built = true;
  state.entered_held.clear();
  state.turn = ++iteration_starts_;
  state.running_variant = state.chosen < state.variants.size() ? state.chosen : 0;
  state.offers_at_start = state.offers;
  state.last_rise = state.running_variant > 0 ? plan_need(state, state.running_variant)
                    : pipelined(state)
                        ? need_to_finish(state.learned.front().needs)
                        : state.peak_held - std::min(state.peak_held, state.idle_held);
  if (state.running_variant > 0) {
    ++state.stats.planned;
    if (state.learned[state.running_variant].pipelined()) ++state.stats.planned_in_steps;
    state.stats.plan_extra_s +=
        state.variants[state.running_variant].seconds - state.variants.front().seconds;
  }
  on_group_start(job, 0, now_s);
}

void nodegroup_policy::on_group_start(job_id job, std::size_t /*group*/, double /*now_s*/) {
  auto& state = jobs_.at(job);
  state.granted = false;
  state.running = true;
  if (progress_ != nullptr) state.entered_held.push_back(progress_->progress(job).held_bytes);
}

void nodegroup_policy::on_group_end(job_id job, std::size_t group, double now_s) {
  auto& state = jobs_.at(job);
  TANDEM_EXPECTS(state.running && group == state.next_group, usage_error,
                 "job " + std::to_string(job) + " ended group " + std::to_string(group) +
                     " but runs group " + std::to_string(state.next_group));
  state.next_group = group + 1;
  state.running = false;
  if (state.beside) {
    // A planned iteration learning its groups, beside the pipeline with its peak reserved: the
    // boundary only makes it return its emptied regions, as a stepping iteration would; it
    // goes on at once.
    state.granted = true;
    return;
  }
  state.ready = true;
  state.ready_since_s = now_s;
  arrive_at_barrier(job, now_s);
}

void nodegroup_policy::on_iteration_end(job_id job, const iteration_report& report, double now_s) {
  auto& state = jobs_.at(job);
  if (report.restarted) {
    state.restart_need = restart_need_after(report.held.peak(), state.restart_need, budget_);
  } else {
    state.restart_need = 0;
    // A restarted iteration (cut short, to run again) is no whole iteration to learn from. A
    // planned one teaches its plan's groups, unless the plans were offered anew while it ran,
    // or it was the job's first (it made the optimizer's state, which later ones do not).
    ++state.stats.iterations;
    if (state.solo) ++state.stats.solo_iterations;
    const auto variant = state.running_variant;
    if (variant == 0) {
      learn(state, state.learned.front(), report, true);
    } else if (variant < state.learned.size()) {
      auto& learned = state.learned[variant];
      if (state.offers != state.offers_at_start || state.stats.iterations <= 1) {
        learned = {};
      } else {
        learned.measured_s = report.end_s - report.start_s;
        learn(state, learned, report, false);
      }
    }
    // A variant that had to swap on demand (it did not fit beside what the others held) costs
    // what it took, copies included, until an iteration of it runs without (as under scrooge):
    // a plain VGG-16 beside two idle jobs took 2.4 s against 0.24 s offered, every iteration,
    // while its plan was never weighed against that.
    if (variant < state.variants.size() &&
        (variant == 0 || state.offers == state.offers_at_start)) {
      auto& way = state.variants[variant];
      way.cost_s = report.swapped_on_demand_bytes > 0
                       ? std::max(way.seconds, report.end_s - report.start_s)
                       : way.seconds;
    }
    state.idle_held = report.held.held_at_end();
  }
  state.running_variant = 0;
  state.chosen = 0;
  state.beside = false;
  state.reserved = 0;
  state.peak_held = std::max(state.peak_held, report.held.peak());
  state.next_group = 0;
  state.running = false;
  state.solo = false;
  // A job with a known count that just ran its last iteration is leaving, not waiting.
  const auto& total = state.info.iterations;
  state.ready = !total || state.stats.iterations < *total;
  state.ready_since_s = now_s;
  arrive_at_barrier(job, now_s);
}

void nodegroup_policy::arrive_at_barrier(job_id job, double now_s) {
  barrier_.arrive(job);
  next_step(now_s);
}

void nodegroup_policy::learn(job_state& job, learned_groups& learned,
                             const iteration_report& report, bool plain) {
  // The first iteration makes the optimizer's state, so only later ones repeat each other.
  if (plain && job.stats.iterations < options_.profile_iterations) return;
  const auto& events = report.memory;
  const auto held_at_start = report.held.held_at_start;
  if (events.empty()) {
    // No events from the driver: the iteration is one group, planned from the regions held.
    learned.partition.reset();
    const auto peak = std::max(report.held.peak(), held_at_start);
    const auto end = report.held.held_at_end();
    const auto net = difference(end, held_at_start);
    learned.needs = {
        {peak - held_at_start, net, net > 0 ? group_kind::allocating : group_kind::freeing}};
    if (plain) job.stats.groups = 1;
    learned.calibrated = true;  // nothing gated: the iteration was measured as it will run
    return;
  }
  const auto allocations = static_cast<std::size_t>(std::count_if(
      events.begin(), events.end(), [](const memory_event& e) { return e.bytes > 0; }));
  if (!learned.partition || learned.partition->allocations != allocations) {
    if (learned.partition && plain) ++job.stats.repartitions;
    learned.partition = partition_iteration(events, held_at_start,
                                            {options_.split_bytes, options_.groups_per_phase, 3});
    learned.needs = needs_of(*learned.partition);
    if (plain) {
      const auto& cut = learned.partition->groups;
      job.stats.groups = cut.size();
      job.stats.allocating_groups =
          static_cast<std::size_t>(std::count_if(cut.begin(), cut.end(), [](const node_group& g) {
            return g.kind == group_kind::allocating;
          }));
      job.stats.split_bytes = learned.partition->split_bytes;
    }
    // The groups' costs were measured without the syncs at their boundaries, which return
    // emptied regions that the next group must borrow again: one more iteration, gated at the
    // new boundaries (alone, or a plan's beside the pipeline), measures them as they will be
    // paid.
    learned.calibrated = false;
    return;
  }
  // Same sequence: each group's regions as measured this time. Where the driver let the job
  // into a group, what it held then is the group's start: the regions handed back at that
  // barrier are gone by then, and the group must borrow again what it needs (the memory events
  // alone would show the holding from before the sync).
  const auto& groups = learned.partition->groups;
  std::vector<std::size_t> start(groups.size());
  std::vector<std::size_t> peak(groups.size());
  std::size_t group = 0;
  std::size_t allocation = 0;
  std::size_t held = held_at_start;
  start[0] = held_at_start;
  for (const auto& event : events) {
    if (event.bytes > 0) {
      if (group + 1 < groups.size() && allocation == groups[group + 1].first_allocation) {
        ++group;
        start[group] = held;
      }
      ++allocation;
    }
    held = event.held_after;
    peak[group] = std::max(peak[group], held);
  }
  if (job.entered_held.size() == groups.size()) start = job.entered_held;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto end = g + 1 < groups.size() ? start[g + 1] : report.held.held_at_end();
    auto& need = learned.needs[g];
    const auto rise = std::max(peak[g], start[g]) - start[g];
    // A larger rise (or net) counts at once; a smaller one halves the excess, so one unusual
    // iteration does not keep the group's plan inflated (which would leave nothing to pair
    // with). Nets vary too: a group may give back a region later in one iteration than in the
    // next, and a plan that counts on the earlier return lets the others over-commit.
    need.rise = !learned.calibrated || rise >= need.rise ? rise : rise + (need.rise - rise) / 2;
    const auto net = difference(end, start[g]);
    need.net = !learned.calibrated || net >= need.net ? net : net + (need.net - net) / 2;
  }
  learned.calibrated = true;
}

bool nodegroup_policy::held_back(job_id id, const job_state& job) const {
  if (job.restart_need == 0 || job.next_group != 0) return false;
  // Waiting helps only while another built job goes on, and leaves in the end: when every other
  // one is held back too, this one tries, and fails for good if it cannot fit.
  const bool another_goes_on = std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
    return entry.first != id && entry.second.built && entry.second.restart_need == 0;
  });
  return another_goes_on && !fits_beside(others_idle(id), job.restart_need, budget_);
}

std::size_t nodegroup_policy::others_idle(job_id id) const {
  std::size_t idle = 0;
  for (const auto& [other, state] : jobs_) {
    if (other != id) idle += state.idle_held;
  }
  return idle;
}

bool nodegroup_policy::needs_solo_fallback(job_id id, const job_state& job) const {
  return !plain_fits_beside_idle(id, job) && others_idle(id) + job.peak_held <= budget_;
}

std::size_t nodegroup_policy::plan_instead(job_id id, const job_state& job) const {
  if (job.variants.size() < 2 || job.next_group != 0) return 0;
  const auto idle = others_idle(id);
  const auto held = held_by(id, job);
  const double plain_s = job.variants.front().cost_s;
  // The plans that fit beside the others' idle holdings: their extra time over plain, and what
  // they need above what the job holds.
  struct fitting_plan {
    double extra_s;
    std::size_t variant;
    std::size_t need;
    auto operator<=>(const fitting_plan&) const = default;
  };
  std::vector<fitting_plan> fitting;
  std::optional<fitting_plan> least_short;  // of those that do not fit, the one short of least
  for (std::size_t k = 1; k < job.variants.size(); ++k) {
    const auto need = plan_need(job, k);
    const fitting_plan plan{job.variants[k].cost_s - plain_s, k, need};
    if (plan_fits_beside_idle(id, job, k)) {
      fitting.push_back(plan);
    } else if (!least_short || need < least_short->need) {
      least_short = plan;
    }
  }
  if (fitting.empty()) {
    // Nothing fits: the job runs alone. Where its plain iteration swapped on demand (a real job
    // whose plain peak does not fit beside the others' idle holdings: its curve, capped by the
    // swapping, seems to fit) and a plan is predicted quicker, the plan short of least runs
    // instead: it swaps only what it lacks (a VGG-16 whose plan was one region short: 0.7 s
    // predicted, against 5.5 s plain), and, if that is slow too, costs what it took.
    return least_short && least_short->extra_s < 0 ? least_short->variant : 0;
  }
  // Running alone costs every other job a plain iteration of this one's; a plan costs this job
  // its extra time.
  const double alone_cost = plain_s * static_cast<double>(jobs_.size() - 1);
  const auto cheapest = *std::min_element(fitting.begin(), fitting.end());
  // A plan that fits only beside the others' idle holdings runs while they are between
  // iterations, one after the other as running alone would. One within the job's share of the
  // room left above every job's holding runs side by side with them: its share is what the
  // others' latest iterations left of that room, or, where they left less, an equal part of it
  // (so that jobs choosing at once do not each count on the others' room). The cheapest such
  // plan is taken where its extra time is below the cheapest plan's plus that wait, and, once
  // an iteration of it has run beside the others, where that iteration took less than the
  // jobs' iterations one after the other would (side by side they share the device, so two
  // iterations at once may take longer than one each after the other: BERT-base x2 at 3.83 GiB
  // on a simulated V100 lost a third of its throughput to a plan 77% dearer).
  const auto room = budget_ > idle + held ? budget_ - idle - held : 0;
  std::size_t others_rise = 0;
  std::size_t sharing = 1;
  for (const auto& [other, state] : jobs_) {
    if (other == id || !state.built) continue;
    others_rise += state.last_rise;
    ++sharing;
  }
  const auto share = std::max(room / sharing, room > others_rise ? room - others_rise : 0);
  std::optional<fitting_plan> side_by_side;
  for (const auto& plan : fitting) {
    const auto measured_s = job.learned[plan.variant].measured_s;
    const bool pays =
        measured_s == 0 ||
        measured_s < static_cast<double>(sharing) * (plain_s + std::max(cheapest.extra_s, 0.0));
    if (plan.need <= share && pays && (!side_by_side || plan < *side_by_side)) side_by_side = plan;
  }
  const auto chosen_plan = side_by_side && side_by_side->extra_s < cheapest.extra_s + alone_cost
                               ? *side_by_side
                               : cheapest;
  const auto extra = chosen_plan.extra_s;
  // A plan faster than the plain iteration (one slowed by passive swapping, as measured where
  // it did not fit) is taken whenever it fits.
  if (extra < 0) return chosen_plan.variant;
  // Otherwise the plain way on, where it can: a pipelined job's groups paired with the others',
  // a job not pipelined yet profiling alone (or, never built, admitted by the shared rule).
  if (plain_fits_beside_idle(id, job)) return 0;
  const bool alone_fits = pipelined(job) && idle + job.peak_held <= budget_;
  // Where running alone cannot fit, any plan that fits beats waiting for others to leave.
  return !alone_fits || extra < alone_cost ? chosen_plan.variant : 0;
}

bool nodegroup_policy::plain_fits_beside_idle(job_id id, const job_state& job) const {
  const auto idle = others_idle(id);
  if (pipelined(job)) {
    return idle + held_by(id, job) + need_to_finish(job.learned.front().needs) <= budget_;
  }
  // As predicted, and, never built, admitted by the shared rule.
  return idle + job.variants.front().peak <= budget_ && (job.built || admits(id));
}

bool nodegroup_policy::plan_fits_beside_idle(job_id id, const job_state& job,
                                             std::size_t variant) const {
  return others_idle(id) + held_by(id, job) + plan_need(job, variant) <= budget_;
}

std::size_t nodegroup_policy::plan_need(const job_state& job, std::size_t variant) {
  // A plan whose groups are learned needs what they need to finish, as a plain iteration; one
  // not yet, its predicted rise, reserved whole.
  const auto& groups = job.learned[variant];
  return groups.pipelined() ? need_to_finish(groups.needs)
                            : as_one_group(job.variants[variant], job.built).rise;
}

bool nodegroup_policy::admits(job_id newcomer) const {
  // Its first grant builds it and runs an iteration whose peak nobody knows yet: the shared rule
  // (admission.hpp) over what the others hold now, as the progress source says. Held back, it
  // holds nobody up; as jobs leave, room appears.
  newcomer_admission admission;
  for (const auto& [id, job] : jobs_) {
    if (id == newcomer) {
      admission.count_own(job.peak_held);
      continue;
    }
    admission.count(held_by(id, job), job.peak_held);
  }
  return admission.admits(budget_);
}

void nodegroup_policy::next_step(double now_s) {
  latest_step_s_ = std::max(latest_step_s_, now_s);
  if (!barrier_.is_open()) return;
  // Profiling comes first: a job not yet pipelined runs its iteration alone once nobody is
  // mid-iteration; until then only jobs mid-iteration go on, so that it is not starved. A
  // calibrating job (solo, gated) goes on through its groups alone.
  const job_state* solo = nullptr;
  job_id solo_id = 0;
  bool anyone_mid_iteration = false;
  std::map<job_id, std::size_t> plans;  // jobs that would run a plan rather than wait or run alone
  for (const auto& [id, job] : jobs_) {
    if (job.ready) {
      if (const auto k = plan_instead(id, job); k > 0) plans[id] = k;
    }
  }
  // Jobs that restarted short of memory wait for the others to leave, unless a plan fits.
  std::set<job_id> waiting_to_fit;
  for (const auto& [id, job] : jobs_) {
    if (job.ready && !plans.contains(id) && held_back(id, job)) waiting_to_fit.insert(id);
  }
  for (const auto& [id, job] : jobs_) {
    if (job.next_group > 0 || job.beside) anyone_mid_iteration = true;
    // Mid-iteration and not stepping: calibrating its plain groups alone.
    if (job.ready && stepping(job) == nullptr && job.next_group > 0) {
      solo = &job;
      solo_id = id;
      anyone_mid_iteration = false;
      break;
    }
    if (!job.ready || waiting_to_fit.contains(id) ||
        (solo != nullptr && job.arrival_rank > solo->arrival_rank))
      continue;
    // A plan that fits beside nobody's iteration (chosen where the plain one fits still less)
    // runs alone, as a profiling iteration does.
    const auto plan = plans.find(id);
    const bool plan_alone = plan != plans.end() && !plan_fits_beside_idle(id, job, plan->second);
    const bool wants_solo =
        job.next_group == 0 &&
        (plan_alone || (plan == plans.end() && (!pipelined(job) ? job.built || admits(id)
                                                                : needs_solo_fallback(id, job))));
    if (wants_solo) {
      solo = &job;
      solo_id = id;
    }
  }
  bool granted_beside = false;
  const auto grant = [&](const std::vector<job_id>& members) {
    std::vector<job_id> stepping;
    for (const auto id : members) {
      auto& job = jobs_.at(id);
      if (job.next_group == 0) {
        const auto plan = plans.find(id);
        job.chosen = plan == plans.end() ? 0 : plan->second;
      }
      // A plan still learning its groups runs beside the steps; one that learned them steps.
      if (job.next_group == 0 && job.chosen > 0 && !job.learned[job.chosen].pipelined()) {
        job.beside = true;
        job.reserved = held_by(id, job) + plan_need(job, job.chosen);
        granted_beside = true;
      } else {
        stepping.push_back(id);
      }
      job.ready = false;
      job.granted = true;
      job.stats.barrier_wait_s += now_s - job.ready_since_s;
      ++job.stats.groups_run;
      ++grants_;
    }
    if (!stepping.empty()) barrier_.open(stepping);
  };
  if (solo != nullptr && !anyone_mid_iteration) {
    if (pipelined(*solo) && !plans.contains(solo_id)) ++jobs_.at(solo_id).stats.solo_fallbacks;
    jobs_.at(solo_id).solo = true;
    grant({solo_id});
    return;
  }

  std::vector<pairing_job> view;
  std::vector<job_id> ids;
  for (const auto& [id, job] : jobs_) {
    pairing_job entry{id, held_by(id, job), {}, job.next_group, false, job.turn, job.idle_held};
    if (job.beside) entry.held = std::max(entry.held, job.reserved);
    if (const auto plan = plans.find(id); plan != plans.end()) {
      const auto& groups = job.learned[plan->second];
      if (groups.pipelined())
        entry.remaining = groups.needs;
      else
        entry.remaining = {as_one_group(job.variants[plan->second], job.built)};
      entry.ready = job.ready && solo == nullptr;
    } else if (const auto* groups = stepping(job)) {
      const auto& needs = groups->needs;
      entry.remaining.assign(
          needs.begin() + static_cast<std::ptrdiff_t>(std::min(job.next_group, needs.size())),
          needs.end());
      entry.ready = job.ready && (solo == nullptr || job.next_group > 0);
    }
    if (waiting_to_fit.contains(id)) entry.ready = false;
    view.push_back(std::move(entry));
    ids.push_back(id);
  }
  auto chosen = choose_step(view, budget_, options_.streams);
  // A planned iteration under way will end and give back what it reserved: wait for it rather
  // than force a step past its reservation.
  const bool planned_under_way =
      std::any_of(jobs_.begin(), jobs_.end(), [](const auto& j) { return j.second.beside; });
  if (chosen.empty() && planned_under_way) return;
  if (chosen.empty()) {
    // Nobody runs and no step passes the checks: a job goes on alone rather than everyone
    // waiting for an event that cannot come. The furthest through its iteration whose next group
    // fits beside what everybody holds (a freeing group usually does) if there is one, else the
    // pipeline's leader; the pool's budget still holds either way.
    std::size_t held = 0;
    for (const auto& entry : view) held += entry.held;
    const auto better = [&](std::size_t i, std::size_t j) {
      return view[i].groups_done > view[j].groups_done ||
             (view[i].groups_done == view[j].groups_done && view[i].turn < view[j].turn);
    };
    std::optional<std::size_t> leader;
    std::optional<std::size_t> fitting;
    for (std::size_t i = 0; i < view.size(); ++i) {
      if (!view[i].ready || view[i].remaining.empty()) continue;
      if (!leader || better(i, *leader)) leader = i;
      if (held + view[i].remaining.front().rise <= budget_ && (!fitting || better(i, *fitting)))
        fitting = i;
    }
    if (fitting) leader = fitting;
    if (!leader) return;
    ++forced_steps_;
    chosen = {*leader};
  }
  std::vector<job_id> members;
  for (const auto i : chosen) members.push_back(ids[i]);
  grant(members);
  // Planned iterations run outside the steps: when only they were granted, the next step may
  // begin at once beside them.
  if (granted_beside && barrier_.is_open()) next_step(now_s);
}

decision nodegroup_policy::answer(job_id job, std::size_t group, double /*now_s*/) {
  const auto& state = jobs_.at(job);
  if (state.granted && state.next_group == group) return decision::start();
  return decision::wait_for_event();
}

decision nodegroup_policy::may_start(job_id job, double now_s) {
  return answer(job, 0, now_s);
}

decision nodegroup_policy::may_enter_group(job_id job, std::size_t group, double now_s) {
  return answer(job, group, now_s);
}

std::vector<std::size_t> nodegroup_policy::group_boundaries(job_id job) const {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return {};
  // The groups of the way it runs this iteration: plain, or the plan chosen at its start.
  const auto& state = found->second;
  const auto& partition =
      state.learned[state.chosen < state.learned.size() ? state.chosen : 0].partition;
  if (!partition) return {};
  std::vector<std::size_t> boundaries;
  const auto& groups = partition->groups;
  for (std::size_t g = 1; g < groups.size(); ++g) boundaries.push_back(groups[g].first_allocation);
  return boundaries;
}

void nodegroup_policy::offer_variants(job_id job, std::vector<footprint_variant> variants) {
  auto& state = jobs_.at(job);
  state.stats.plans = variants.empty() ? 0 : static_cast<std::int64_t>(variants.size() - 1);
  // New plans have groups of their own to learn; a plan under way keeps its groups until it
  // ends, and then forgets them (offers_at_start).
  ++state.offers;
  state.learned.resize(std::max<std::size_t>(variants.size(), 1));
  for (std::size_t k = 1; k < state.learned.size(); ++k) {
    if (k != state.running_variant) state.learned[k] = {};
  }
  state.variants.clear();
  for (const auto& v : variants) {
    const double seconds = v.iteration_s > 0 ? v.iteration_s : v.held.duration_s;
    state.variants.push_back({v.held.held_at_start, v.held.peak(),
                              difference(v.held.held_at_end(), v.held.held_at_start), seconds,
                              seconds});
  }
  if (state.running || state.next_group > 0) return;
  if (state.granted && state.chosen > 0) {
    // Granted a plan that is withdrawn before its iteration began: the grant, made for that
    // plan's needs, goes back, and the next step decides again.
    state.granted = false;
    state.ready = true;
    state.beside = false;
    state.reserved = 0;
    state.chosen = 0;
    --state.stats.groups_run;
    --grants_;
    barrier_.remove(job);
    next_step(latest_step_s_);
    return;
  }
  state.chosen = 0;
}

std::size_t nodegroup_policy::chosen_variant(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? 0 : found->second.chosen;
}

nodegroup_job_stats nodegroup_policy::stats(job_id job) const {
  if (const auto found = jobs_.find(job); found != jobs_.end()) return found->second.stats;
  if (const auto found = departed_.find(job); found != departed_.end()) return found->second;
  return {};
}

std::optional<iteration_partition> nodegroup_policy::partition_of(job_id job) const {
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return std::nullopt;
  return found->second.learned.front().partition;
}

std::vector<group_need> nodegroup_policy::planned_needs(job_id job) const {
  const auto found = jobs_.find(job);
  return found == jobs_.end() ? std::vector<group_need>{} : found->second.learned.front().needs;
}

std::vector<policy_statistic> nodegroup_policy::job_statistics(job_id job) const {
  const auto s = stats(job);
  return {{"groups", static_cast<double>(s.groups)},
          {"allocating_groups", static_cast<double>(s.allocating_groups)},
          {"split_mib", static_cast<double>(s.split_bytes) / static_cast<double>(MiB)},
          {"solo_iterations", static_cast<double>(s.solo_iterations)},
          {"groups_run", static_cast<double>(s.groups_run)},
          {"repartitions", static_cast<double>(s.repartitions)},
          {"solo_fallbacks", static_cast<double>(s.solo_fallbacks)},
          {"barrier_wait_s", s.barrier_wait_s},
          {"plans", static_cast<double>(s.plans)},
          {"planned", static_cast<double>(s.planned)},
          {"planned_in_steps", static_cast<double>(s.planned_in_steps)},
          {"plan_extra_s", s.plan_extra_s}};
}

std::vector<policy_statistic> nodegroup_policy::system_statistics() const {
  const auto steps = static_cast<double>(barrier_.steps());
  return {{"steps", steps},
          {"groups_per_step", steps > 0 ? static_cast<double>(grants_) / steps : 0},
          {"forced_steps", static_cast<double>(forced_steps_)}};
}

}  // namespace tandem::schedule
