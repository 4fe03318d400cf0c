#include "tandem/sim/workload_sim.hpp"

#include <algorithm>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/joint_planner.hpp"
#include "tandem/footprint/online_replanner.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/memory/pool_options.hpp"
#include "tandem/runtime/workload_validation.hpp"
#include "tandem/schedule/registry.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/profile_generator.hpp"
#include "tandem/sim/region_replay.hpp"
#include "tandem/sim/sequence_generator.hpp"

namespace tandem::sim {
namespace {

using runtime::fail_at;

bool is_unified(const runtime::workload& spec, const sim_setup& setup) {
  return runtime::policy_name(spec, setup.overrides) == unified_memory_policy;
}

std::size_t region_size_of(const runtime::workload& spec) {
  return spec.device.region_size != 0 ? spec.device.region_size
                                      : memory::pool_options{}.region_size;
}

const runtime::job_profile* recorded_profile(const runtime::profile_set& profiles,
                                             const std::string& name) {
  for (const auto& job : profiles.jobs) {
    if (job.name == name) return &job;
  }
  return nullptr;
}

model_request request_of(const runtime::workload& spec, const runtime::job_spec& job,
                         const sim_setup& setup) {
  return {job.model, setup.batch_size.value_or(job.batch_size),
          runtime::model_option_values(spec, job), job.optimizer};
}

/// The median of the iterations after the first (which also builds optimizer state).
double steady_iteration_s(const runtime::job_profile& recorded) {
  std::vector<double> times(recorded.iteration_s.begin() + (recorded.iteration_s.size() > 1),
                            recorded.iteration_s.end());
  if (times.empty()) return 0;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Iterations a simulation replays at most, all jobs together (50 times the 100-job trace's):
/// every one is recorded, and a simulation takes about 70 us per iteration with 100 jobs.
constexpr double max_simulated_iterations = 1e6;

/// "1.23e+07", "0.05": three significant digits.
std::string number_text(double value) {
  std::ostringstream text;
  text << std::setprecision(3) << value;
  return text.str();
}

/// Refuses, before anything is simulated, a job that would run past the horizon even alone, and
/// more iterations than a simulation replays.
void check_simulated_work(const runtime::workload& spec, const std::vector<simulated_job>& jobs,
                          double horizon_s) {
  double iterations = 0;
  for (const auto& job : jobs) {
    const double iteration_s = job.profile->solo_iteration_s();
    const auto& each = job.spec;
    // Alone it runs its iterations back to back; a duration job runs as many as fit in it.
    const double count = each.iterations
                             ? static_cast<double>(*each.iterations)
                             : each.duration_s.value_or(0) / std::max(iteration_s, 1e-9);
    const double running_s = each.iterations ? count * iteration_s : each.duration_s.value_or(0);
    const double end_s = each.arrival_s + job.profile->setup_s + running_s;
    if (end_s > horizon_s) {
      const std::string length = each.iterations
                                     ? std::to_string(*each.iterations) + " iterations of " +
                                           number_text(iteration_s) + " s each"
                                     : "its duration";
      fail_at(spec, each.line,
              "job '" + each.name + "' would end " + number_text(end_s) +
                  " s after the start even alone (arriving at " + number_text(each.arrival_s) +
                  " s, " + length + "), past the simulation's horizon of " +
                  number_text(horizon_s) + " s; lower its " +
                  (each.iterations ? "iterations" : "duration or arrival"));
    }
    iterations += count;
  }
  if (iterations > max_simulated_iterations) {
    throw config_error(spec.source + ": the jobs would run about " + number_text(iterations) +
                       " iterations in all, more than the " +
                       number_text(max_simulated_iterations) +
                       " a simulation replays; lower their iterations or durations");
  }
}

/// A job's profile as generated, or planned, and what planning made of it.
struct generated_job {
  std::shared_ptr<const job_profile> profile;
  std::optional<planned_job_summary> plan;
  std::shared_ptr<const footprint_variants> variants;  ///< for a policy that chooses plans
};

/// The job's profile generated for the setup's GPU, planned by `planning` when it is given. Plans
/// are priced at the GPU's host link, where swaps go.
generated_job generate_job(const runtime::workload& spec, const sim_setup& setup,
                           const model_request& request,
                           const std::optional<job_planning>& maybe_planning) {
  const auto& gpu = find_gpu(*setup.gpu);
  const auto region_size = region_size_of(spec);
  auto vanilla = generate_profile(request, gpu);
  replay_regions(vanilla, region_size);
  if (!maybe_planning)
    return {std::make_shared<const job_profile>(std::move(vanilla)), {}, nullptr};

  const auto& planning = *maybe_planning;
  const auto sequence = generate_access_sequence(request, gpu);
  planned_iteration planned;
  std::string budget;
  if (planning.budget) {
    // The vanilla peak as the cost model counts it, as `tandem plan` reads a share.
    const auto vanilla_peak = footprint::predict(sequence, footprint::plan{}).peak_bytes;
    planned =
        plan_iteration(vanilla, sequence, planning.planner,
                       planning.budget->bytes_for(vanilla_peak), gpu.pcie_bandwidth, region_size);
    budget = planning.budget->describe();
  } else {
    // What a job may hold when all of the workload's run at once.
    const auto device_budget = simulated_device(spec, setup).budget;
    const auto jobs = std::max<std::size_t>(1, spec.jobs.size());
    planned = plan_for_share(vanilla, sequence, planning.planner, device_budget / jobs,
                             gpu.pcie_bandwidth, region_size);
    budget = "its share of the budget (" + format_bytes(device_budget) +
             (jobs > 1 ? " / " + std::to_string(jobs) + " jobs" : std::string()) +
             ") in regions held";
  }
  planned_job_summary summary{
      .job = "",
      .planner = planning.planner,
      .budget = budget,
      .budget_bytes = planned.plan.budget_bytes,
      .decisions = planned.plan.decisions.size(),
      .vanilla_peak_bytes = planned.vanilla.peak_bytes,
      .planned_peak_bytes = planned.predicted.peak_bytes,
      .vanilla_held_bytes = vanilla.held.peak(),
      .planned_held_bytes = planned.profile.held.peak(),
      .vanilla_s = vanilla.solo_iteration_s(),
      .planned_s = planned.profile.solo_iteration_s(),
      .stall_s = planned.predicted.stall_s,
      .recompute_s = planned.predicted.recompute_s,
      .swapped_out_bytes = planned.predicted.swapped_out_bytes,
      .copy_bandwidth = gpu.pcie_bandwidth,
  };
  return {std::make_shared<const job_profile>(std::move(planned.profile)), std::move(summary),
          nullptr};
}

/// Joint plans made again for regions above the device's budget, at most this many times.
constexpr int max_joint_attempts = 4;

/// The most regions `profiles` hold together, their iterations started at once (as a joint plan
/// prices them).
std::size_t held_together(const std::vector<job_profile>& profiles) {
  std::vector<schedule::usage_step> steps;
  std::int64_t held = 0;
  for (const auto& profile : profiles) {
    held += static_cast<std::int64_t>(profile.held.held_at_start);
    steps.insert(steps.end(), profile.held.steps.begin(), profile.held.steps.end());
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const auto& a, const auto& b) { return a.at_s < b.at_s; });
  std::int64_t most = held;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    held += steps[i].delta;
    // What is held at the end of an instant: every step at it applied.
    if (i + 1 < steps.size() && steps[i + 1].at_s == steps[i].at_s) continue;
    most = std::max(most, held);
  }
  return static_cast<std::size_t>(std::max<std::int64_t>(most, 0));
}

/// Seconds since an iteration's start at which it reached `position` (first got there).
double reached_at(const iteration_progress& progress, double position) {
  const auto& p = progress.position_s;
  const auto& t = progress.at_s;
  const auto j =
      static_cast<std::size_t>(std::lower_bound(p.begin(), p.end(), position) - p.begin());
  if (j == 0) return t.front();
  if (j == p.size()) return t.back();
  return t[j - 1] + (position - p[j - 1]) / (p[j] - p[j - 1]) * (t[j] - t[j - 1]);
}

/// Seconds since an iteration's start at which it went on from `position` (last was there).
double left_at(const iteration_progress& progress, double position) {
  const auto& p = progress.position_s;
  const auto& t = progress.at_s;
  const auto after =
      static_cast<std::size_t>(std::upper_bound(p.begin(), p.end(), position) - p.begin());
  if (after == 0) return t.front();
  const auto i = after - 1;
  if (after == p.size() || p[i] == position) return t[i];
  return t[i] + (position - p[i]) / (p[after] - p[i]) * (t[after] - t[i]);
}

/// The workload's jobs planned together by a joint planner (TENSILE), for the jobs present, made
/// again as jobs come and go and as their operations' times drift (§4.5: a new plan for every
/// present job, taken at its next iteration start), by the online_replanner the runtime uses:
/// one budget for all of them (the plan budget's share of their vanilla peaks added up, else the
/// device's budget), their copies on one channel, priced by predict_together as if they started
/// together; each job's profile replays its own prediction from that pricing. Each iteration a
/// job ends reports its operations' times beside the others (their share of the device slows
/// them), which move the estimates; a set of jobs present is planned again when they drift.
class joint_plans final : public joint_replanning {
 public:
  joint_plans(const runtime::workload& spec, const sim_setup& setup,
              const std::vector<model_request>& requests)
      : gpu_(find_gpu(*setup.gpu)),
        region_size_(region_size_of(spec)),
        planning_(*setup.planning),
        device_budget_(simulated_device(spec, setup).budget),
        costs_{.copy_bandwidth = gpu_.pcie_bandwidth},
        tracker_(footprint::make_online_replanner(planning_.planner, costs_)) {
    for (const auto& request : requests) {
      vanilla_.push_back(generate_profile(request, gpu_));
      replay_regions(vanilla_.back(), region_size_);
      sequences_.push_back(generate_access_sequence(request, gpu_));
    }
  }

  std::shared_ptr<const job_profile> profile_for(std::size_t member,
                                                 const std::vector<std::size_t>& present) override {
    const auto& made = plan(present);
    const auto at = std::find(present.begin(), present.end(), member);
    TANDEM_EXPECTS(at != present.end(), usage_error,
                   "joint re-planning: job " + std::to_string(member) + " is not present");
    return made.profiles[static_cast<std::size_t>(at - present.begin())];
  }

  void measured(std::size_t member, const job_profile& replayed,
                const iteration_progress& progress) override {
    const auto present = tracker_->jobs();
    if (progress.at_s.empty() || !std::binary_search(present.begin(), present.end(), member))
      return;
    // The replayed profile is the job's vanilla one stretched evenly by its plan: a time t of
    // the sequence is position t x scale in it. Dividing by the scale leaves out the plan's own
    // extra time, which is no drift; what the others' share of the device added stays.
    const auto& sequence = sequences_[member];
    const double scale = replayed.solo_iteration_s() / sequence.iteration_s();
    std::vector<double> durations;
    durations.reserve(sequence.operations.size());
    for (const auto& op : sequence.operations) {
      const double took = reached_at(progress, (op.start_s + op.duration_s) * scale) -
                          left_at(progress, op.start_s * scale);
      durations.push_back(std::max(0.0, took / scale));
    }
    tracker_->record_iteration(member, durations);
    // Every set is planned afresh, from the estimates of then, at its next iteration start.
    if (tracker_->due() == footprint::replan_reason::drift) ++drift_judged_;
  }

  /// Every job planned together, as if all started at once: the profiles the jobs begin with.
  std::vector<generated_job> all() {
    std::vector<std::size_t> everyone(sequences_.size());
    for (std::size_t j = 0; j < everyone.size(); ++j) everyone[j] = j;
    const auto& made = plan(everyone);
    std::vector<generated_job> out;
    for (std::size_t j = 0; j < everyone.size(); ++j)
      out.push_back({made.profiles[j], made.summaries[j], nullptr});
    return out;
  }

 private:
  struct made_plans {
    std::vector<std::shared_ptr<const job_profile>> profiles;
    std::vector<planned_job_summary> summaries;
  };

  const made_plans& plan(const std::vector<std::size_t>& present) {
    const bool on_drift = last_ && last_->first.first == present;
    // Jobs asking at their iteration starts while the same jobs are present take the plans of
    // then; a different set is planned afresh (from the estimates of now).
    auto key = std::make_pair(present, drift_judged_);
    if (last_ && last_->first == key) return last_->second;
    // The replanner holds the jobs present, each with its estimates so far.
    for (const auto job : tracker_->jobs()) {
      if (!std::binary_search(present.begin(), present.end(), job)) tracker_->remove_job(job);
    }
    const auto tracked = tracker_->jobs();
    for (const auto j : present) {
      if (!std::binary_search(tracked.begin(), tracked.end(), j))
        tracker_->add_job(j, sequences_[j]);
    }
    const auto n = present.size();
    std::vector<footprint::access_sequence> estimates;
    for (const auto j : present) estimates.push_back(tracker_->estimate_of(j));
    std::vector<footprint::plan> nothing(n);
    std::vector<footprint::planned_job> priced;
    for (std::size_t i = 0; i < n; ++i) priced.push_back({&estimates[i], &nothing[i]});
    const auto vanilla_predictions = footprint::predict_together(priced, costs_);
    std::size_t budget_bytes = device_budget_;
    std::string budget;
    if (planning_.budget) {
      budget_bytes =
          planning_.budget->bytes_for(footprint::system_peak_of(vanilla_predictions).bytes);
      budget = planning_.budget->describe() + " (the jobs' peaks added up), all jobs together";
    } else {
      budget = "the device budget (" + format_bytes(budget_bytes) + "), all jobs together";
    }
    // Labelled by the jobs planned together where that is not all of them, and by the plannings
    // drift set off, so that a job's iterations say which plan they ran.
    std::string label = planning_.planner;
    std::vector<std::string> notes;
    if (n != sequences_.size())
      notes.push_back("planned with " + std::to_string(n) + (n == 1 ? " job" : " jobs"));
    if (const auto drifts = drift_plannings_made_ + (on_drift ? 1 : 0); drifts > 0)
      notes.push_back("re-planned on drift " + std::to_string(drifts) +
                      (drifts == 1 ? " time" : " times"));
    for (std::size_t k = 0; k < notes.size(); ++k) label += (k == 0 ? " (" : "; ") + notes[k];
    if (!notes.empty()) label += ")";
    std::vector<footprint::plan> plans;
    std::vector<footprint::prediction> predictions;
    std::vector<job_profile> profiles;
    // For the device's budget, as plan_for_share does for one job: the plans are made in the
    // cost model's bytes, the jobs hold whole regions, so where the regions held together come
    // above the budget the jobs are planned again below what the plans reached, by the excess.
    std::size_t plan_bytes = budget_bytes;
    for (int attempt = 0; attempt < max_joint_attempts; ++attempt) {
      tracker_->set_budget(plan_bytes);
      auto by_job = tracker_->replan();
      std::vector<footprint::plan> again;
      for (const auto j : present) again.push_back(std::move(by_job.at(j)));
      const auto same = [&] {
        return std::equal(again.begin(), again.end(), plans.begin(), plans.end(),
                          [](const auto& x, const auto& y) { return x.decisions == y.decisions; });
      };
      if (attempt > 0 && same()) break;  // the planner made the same plans: nothing gained
      plans = std::move(again);
      for (std::size_t i = 0; i < n; ++i) priced[i].plan = &plans[i];
      predictions = footprint::predict_together(priced, costs_);
      profiles.clear();
      for (std::size_t i = 0; i < n; ++i) {
        const auto j = present[i];
        profiles.push_back(plans[i].decisions.empty()
                               ? vanilla_[j]
                               : profile_from_prediction(vanilla_[j], estimates[i], predictions[i],
                                                         label, region_size_));
      }
      if (planning_.budget) break;  // a share of the peaks is a budget in the cost model's bytes
      const auto held = held_together(profiles);
      const auto reached = std::min(plan_bytes, footprint::system_peak_of(predictions).bytes);
      if (held <= budget_bytes || held - budget_bytes >= reached) break;
      plan_bytes = reached - (held - budget_bytes);
    }
    made_plans made;
    for (std::size_t i = 0; i < n; ++i) {
      const auto j = present[i];
      auto profile = std::make_shared<const job_profile>(std::move(profiles[i]));
      made.summaries.push_back({
          .job = "",
          .planner = planning_.planner,
          .budget = budget,
          .budget_bytes = plan_bytes,
          .decisions = plans[i].decisions.size(),
          .vanilla_peak_bytes = vanilla_predictions[i].peak_bytes,
          .planned_peak_bytes = predictions[i].peak_bytes,
          .vanilla_held_bytes = vanilla_[j].held.peak(),
          .planned_held_bytes = profile->held.peak(),
          .vanilla_s = vanilla_[j].solo_iteration_s(),
          .planned_s = profile->solo_iteration_s(),
          .stall_s = predictions[i].stall_s,
          .recompute_s = predictions[i].recompute_s,
          .swapped_out_bytes = predictions[i].swapped_out_bytes,
          .copy_bandwidth = gpu_.pcie_bandwidth,
      });
      made.profiles.push_back(std::move(profile));
    }
    if (on_drift) ++drift_plannings_made_;
    last_.emplace(std::move(key), std::move(made));
    return last_->second;
  }

  const gpu_spec& gpu_;
  std::size_t region_size_;
  job_planning planning_;
  std::size_t device_budget_;
  footprint::cost_options costs_;
  // The jobs present, their estimates and drift, judged as the runtime judges it: after each
  // planning the jobs measure `settle` iterations for a reference. Without that the simulated
  // jobs, each slowing the others as its plan changed, were planned again every few iterations,
  // their plans swinging between cheap and dear (three VGG-16s: 22 plannings, 0.75x the
  // throughput without drift).
  std::unique_ptr<footprint::online_replanner> tracker_;
  std::size_t drift_judged_ = 0;          // times a drift was judged (several may come at once)
  std::size_t drift_plannings_made_ = 0;  // made for the jobs present (a set changed meanwhile: no)
  std::vector<job_profile> vanilla_;
  std::vector<footprint::access_sequence> sequences_;
  std::optional<std::pair<std::pair<std::vector<std::size_t>, std::size_t>, made_plans>> last_;
};

/// Whether the setup plans its jobs with a joint planner.
bool plans_jointly(const sim_setup& setup) {
  if (!setup.gpu || !setup.planning) return false;
  return footprint::joint_planning_of(*footprint::make_planner(setup.planning->planner)) != nullptr;
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const auto& gpu : gpu_specs()) names.push_back(gpu.name);
  return names;
}

}  // namespace

std::vector<std::string> simulated_policy_names() {
  auto names = schedule::policy_names();
  names.emplace_back(unified_memory_policy);
  return names;
}

runtime::workload_vocabulary simulation_vocabulary(const sim_setup& setup) {
  runtime::workload_vocabulary vocabulary;
  if (setup.gpu) vocabulary.models = generated_model_names();
  vocabulary.policies = simulated_policy_names();
  return vocabulary;
}

void validate_simulation(const runtime::workload& spec, const sim_setup& setup) {
  TANDEM_EXPECTS(setup.gpu.has_value() != (setup.recorded != nullptr), config_error,
                 "a simulation needs its jobs' profiles from exactly one source: --gpu NAME "
                 "(generated from each job's model; known GPUs: " +
                     join_names(gpu_names()) +
                     ") or --profiles FILE (recorded on this machine by `tandem profile`)");
  for (const auto& job : spec.jobs) {
    if (job.kind == runtime::job_kind::inference) {
      fail_at(spec, job.line,
              "job '" + job.name +
                  "' is an inference job; the simulator replays training iterations only: run "
                  "the workload with `tandem run`, or make the job a training job");
    }
  }
  if (const auto planner = runtime::policy_planner_of(spec, setup.overrides)) {
    TANDEM_EXPECTS(setup.gpu.has_value(), config_error,
                   "the policy's planner (" + *planner +
                       ") needs --gpu NAME: its plans are made from each job's tensor access "
                       "sequence, which the catalogue generates, while profiles recorded by "
                       "`tandem profile` carry none yet");
    TANDEM_EXPECTS(!setup.planning, config_error,
                   "--planner plans every job once, while the policy's planner (" + *planner +
                       ") lets the policy choose a plan at each iteration; use one of them");
  }
  if (setup.planning) {
    check_planner(setup.planning->planner);
    TANDEM_EXPECTS(setup.gpu.has_value(), config_error,
                   "planned jobs (--planner " + setup.planning->planner +
                       ") need --gpu NAME: a plan is made from the job's tensor access sequence, "
                       "which the catalogue generates for every model, while profiles recorded "
                       "by `tandem profile` carry none yet");
  }
  const auto device = simulated_device(spec, setup);
  // The checks every command shares, on the device simulated (the budget override is judged
  // against its capacity) and at the batch simulated. mps-um is spatial sharing with another
  // memory model: its policy is judged as spatial's.
  auto checked = spec;
  checked.device.capacity = device.capacity;
  if (setup.batch_size) {
    for (auto& job : checked.jobs) job.batch_size = *setup.batch_size;
  }
  // Checked here, where mps-um is known too: validate_workload knows the runtime's policies.
  runtime::require_known_policy(runtime::policy_name(spec, setup.overrides),
                                simulated_policy_names());
  auto overrides = setup.overrides;
  if (is_unified(spec, setup)) {
    if (!setup.overrides.policy && !spec.policy.options.empty())
      fail_at(spec, spec.policy.line, "policy 'mps-um' takes no options");
    overrides.policy = "spatial";
  }
  runtime::validate_workload(checked, overrides);
  if (setup.gpu) {
    // The catalogue's own: the papers' models, the optimizer, a network's total size.
    for (const auto& job : spec.jobs) {
      try {
        check_request(request_of(spec, job, setup));
      } catch (const config_error& e) {
        fail_at(spec, job.line, "job '" + job.name + "': " + e.what());
      }
    }
    return;
  }
  TANDEM_EXPECTS(!setup.batch_size, config_error,
                 "a batch sweep needs --gpu: recorded profiles hold one batch size each");
  for (const auto& job : spec.jobs) {
    const auto* recorded = recorded_profile(*setup.recorded, job.name);
    if (recorded == nullptr) {
      fail_at(spec, job.line,
              "job '" + job.name + "' has no profile in " + setup.recorded->workload +
                  "'s profiles; run `tandem profile " + spec.source + "` to record them");
    }
    if (recorded->batch_size != job.batch_size || recorded->model != job.model) {
      fail_at(spec, job.line,
              "job '" + job.name + "' is " + job.model + " at batch " +
                  std::to_string(job.batch_size) + " but its profile is " + recorded->model +
                  " at batch " + std::to_string(recorded->batch_size) + "; profile it again");
    }
    if (!recorded->completed || !recorded->last_iteration) {
      fail_at(spec, job.line,
              "job '" + job.name + "' failed when profiled (" + recorded->error +
                  "); a failed profile cannot be simulated");
    }
  }
}

device_model simulated_device(const runtime::workload& spec, const sim_setup& setup) {
  device_model device;
  device.unified_memory = is_unified(spec, setup);
  if (!setup.gpu) {
    device.description = "simulated " + (setup.recorded ? setup.recorded->device : std::string());
    device.capacity = spec.device.capacity;
    device.budget = runtime::budget_of(spec, setup.overrides);
    return device;
  }
  auto gpu = find_gpu(*setup.gpu);
  device.description = "simulated " + gpu.name;
  if (setup.gpu_memory) {
    TANDEM_EXPECTS(*setup.gpu_memory > 0, config_error,
                   "--gpu-memory must be a positive size (e.g. 16GiB)");
    gpu.memory_bytes = *setup.gpu_memory;
    device.description += " with " + format_bytes(gpu.memory_bytes);
  }
  device.capacity = gpu.memory_bytes;
  device.pcie_bandwidth = gpu.pcie_bandwidth;
  device.host_cores = gpu.host_cores;
  device.in_flight_ops = gpu.in_flight_ops;
  const auto budget = setup.overrides.budget.value_or(spec.device.budget);
  TANDEM_EXPECTS(budget <= gpu.memory_bytes, config_error,
                 "budget " + format_bytes(budget) + " exceeds the " +
                     format_bytes(gpu.memory_bytes) + " of " + gpu.name +
                     "; lower it with --budget or pick a larger GPU");
  device.budget = budget == 0 ? gpu.memory_bytes : budget;
  for (const auto& change : spec.device.budget_schedule) {
    if (change.bytes > gpu.memory_bytes) {
      fail_at(spec, change.line,
              "budget_schedule sets " + format_bytes(change.bytes) + ", more than the " +
                  format_bytes(gpu.memory_bytes) + " of " + gpu.name);
    }
  }
  return device;
}

job_profile from_recorded(const runtime::job_profile& recorded, unsigned cores) {
  job_profile profile;
  profile.model = recorded.model;
  profile.batch_size = recorded.batch_size;
  profile.source = "recorded";
  profile.setup_s = recorded.setup_s;
  profile.persistent_tensors = {recorded.persistent_bytes};
  profile.peak_live_bytes = recorded.peak_live_bytes;
  const auto& detail = *recorded.last_iteration;
  const double measured = detail.held.duration_s;
  const double steady = steady_iteration_s(recorded);
  const double stretch = measured > 0 && steady > 0 ? steady / measured : 1;
  const double fill = std::min(1.0, static_cast<double>(recorded.threads) / std::max(1u, cores));
  // Operations as recorded, with the host time between them as operations of their own, so
  // that they add up to the iteration.
  double at = 0;
  const auto add = [&](const std::string& name, double until) {
    if (until > at) profile.operations.push_back({name, (until - at) * stretch, fill, 0});
    at = std::max(at, until);
  };
  for (const auto& op : detail.operations) {
    add("(host)", op.start_s);
    add(op.name, op.start_s + op.duration_s);
  }
  add(detail.operations.empty() ? "iteration" : "(host)", measured);
  for (const auto& step : detail.allocations)
    profile.steps.push_back({step.at_s * stretch, step.delta_bytes, step.kind});
  profile.held = detail.held;
  profile.held.duration_s = measured * stretch;
  for (auto& step : profile.held.steps) step.at_s *= stretch;
  return profile;
}

std::vector<simulated_job> simulated_jobs(const runtime::workload& spec, const sim_setup& setup,
                                          std::vector<planned_job_summary>* plans) {
  std::vector<simulated_job> jobs;
  if (plans_jointly(setup)) {
    std::vector<model_request> requests;
    for (const auto& job : spec.jobs) requests.push_back(request_of(spec, job, setup));
    const auto replanning = std::make_shared<joint_plans>(spec, setup, requests);
    auto made = replanning->all();
    for (std::size_t i = 0; i < spec.jobs.size(); ++i) {
      simulated_job simulated;
      simulated.spec = spec.jobs[i];
      simulated.spec.batch_size = requests[i].batch_size;
      simulated.profile = made[i].profile;
      simulated.replanning = replanning;
      simulated.member = i;
      if (plans != nullptr && made[i].plan) {
        plans->push_back(*made[i].plan);
        plans->back().job = spec.jobs[i].name;
      }
      jobs.push_back(std::move(simulated));
    }
    return jobs;
  }
  using key = std::tuple<std::string, std::int64_t, std::map<std::string, double>, std::string>;
  std::map<key, generated_job> generated;
  for (const auto& job : spec.jobs) {
    simulated_job simulated;
    simulated.spec = job;
    if (setup.gpu) {
      auto request = request_of(spec, job, setup);
      simulated.spec.batch_size = request.batch_size;
      // Every job is planned alike (setup.planning); a job's own planner and plan budget would
      // be chosen here, and then belong to the key.
      auto& made =
          generated[key{request.model, request.batch_size, request.options, request.optimizer}];
      if (!made.profile) {
        made = generate_job(spec, setup, request, setup.planning);
        if (const auto planner = runtime::policy_planner_of(spec, setup.overrides)) {
          const auto& gpu = find_gpu(*setup.gpu);
          made.variants = std::make_shared<const footprint_variants>(
              make_footprint_variants(made.profile, generate_access_sequence(request, gpu),
                                      *planner, gpu.pcie_bandwidth, region_size_of(spec)));
        }
      }
      simulated.profile = made.profile;
      simulated.variants = made.variants;
      if (plans != nullptr && made.plan) {
        plans->push_back(*made.plan);
        plans->back().job = job.name;
      }
    } else {
      simulated.profile = std::make_shared<const job_profile>(
          from_recorded(*recorded_profile(*setup.recorded, job.name), setup.recorded->cores));
    }
    jobs.push_back(std::move(simulated));
  }
  return jobs;
}

namespace {

/// Refuses a job that no policy can run: its least iteration alone holds more regions than the
/// largest budget of the run (unified memory pages instead, so it is not checked).
void check_jobs_fit_alone(const runtime::workload& spec, const std::vector<simulated_job>& jobs,
                          const device_model& device) {
  if (device.unified_memory) return;
  const auto most = runtime::largest_budget(spec, device.budget);
  for (const auto& job : jobs) {
    std::size_t least = job.profile->held.peak();
    const bool planned = job.variants != nullptr && job.variants->profiles.size() > 1;
    if (job.variants != nullptr) {
      for (const auto& variant : job.variants->profiles)
        least = std::min(least, variant->held.peak());
    }
    if (least <= most) continue;
    const std::string what = planned ? " under its smallest plan"
                             : !job.profile->plan.empty()
                                 ? " under its plan (" + job.profile->plan + ")"
                                 : "";
    fail_at(spec, job.spec.line,
            "job '" + job.spec.name + "' holds " + format_bytes(least) +
                " of regions at its peak even alone" + what + ", more than the budget of " +
                format_bytes(most) +
                " ever allows, so it would fail under every "
                "policy; raise the budget (--budget), lower its batch_size" +
                (planned ? std::string()
                         : ", or let plans shrink it (--policy-planner tensile, or --planner)"));
  }
}

}  // namespace

runtime::run_result simulate_workload(const runtime::workload& spec, const sim_setup& setup,
                                      std::vector<planned_job_summary>* plans) {
  validate_simulation(spec, setup);
  const auto device = simulated_device(spec, setup);
  const auto jobs = simulated_jobs(spec, setup, plans);
  check_simulated_work(spec, jobs, setup.options.horizon_s);
  if (setup.refuse_jobs_that_never_fit) check_jobs_fit_alone(spec, jobs, device);
  auto name = runtime::policy_name(spec, setup.overrides);
  auto context = runtime::policy_context_of(spec, setup.overrides, device.budget);
  // MPS shares compute and memory like spatial sharing; what differs is the memory model.
  const auto policy = schedule::make_policy(device.unified_memory ? "spatial" : name, context);
  auto result = simulate(jobs, *policy, device, spec.device.budget_schedule, setup.options);
  result.workload = spec.source;
  result.policy = name;
  return result;
}

}  // namespace tandem::sim
