#include "tandem/runtime/session.hpp"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "planned_training.hpp"
#include "shared_device.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/copy_channel.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/models/optimizer.hpp"
#include "tandem/models/zoo.hpp"
#include "tandem/runtime/region_waiter.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/runtime/workload_validation.hpp"
#include "tandem/schedule/policy_capabilities.hpp"
#include "tandem/schedule/registry.hpp"
#include "tandem/torch/cpu_allocator.hpp"
#include "tandem/torch/matched_copy_bandwidth.hpp"
#include "training_job.hpp"

namespace tandem::runtime {

namespace {

using detail::job_progress;

/// The job's [job.model_options] as the zoo's options (validate_workload has checked them).
models::model_options to_model_options(const workload& spec, const job_spec& job) {
  auto options = models::default_options(job.model);
  for (const auto& [key, value] : model_option_values(spec, job))
    models::set_option(options, key, value);
  return options;
}

/// Prints a progress line every interval until stopped.
class progress_printer {
 public:
  progress_printer(const run_options& options, const std::vector<job_spec>& jobs,
                   const std::vector<job_progress>& progress, const memory_monitor& monitor,
                   const policy_gate& gate)
      : options_(options), jobs_(jobs), progress_(progress), monitor_(monitor), gate_(gate) {
    if (options_.progress != nullptr && options_.progress_interval_s > 0) {
      thread_ = std::thread([this] { loop(); });
    }
  }
  ~progress_printer() { stop(); }
  progress_printer(const progress_printer&) = delete;
  progress_printer& operator=(const progress_printer&) = delete;

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    const auto interval = std::chrono::duration<double>(options_.progress_interval_s);
    while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) print();
  }

  void print() {
    static constexpr std::array<const char*, 9> phases{"pending",   "waiting", "setup",
                                                       "training",  "serving", "idle",
                                                       "completed", "failed",  "stopped"};
    std::ostringstream line;
    line << '[' << std::fixed << std::setprecision(1) << std::setw(7) << gate_.now() << " s]";
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      const auto& p = progress_[j];
      const auto iterations = p.iterations.load();
      const std::string total =
          jobs_[j].iterations ? '/' + std::to_string(*jobs_[j].iterations) : std::string();
      const auto id = p.job.load();
      const std::size_t live =
          id >= 0 ? monitor_.current(static_cast<memory::job_id>(id)).live_bytes : 0;
      line << "  " << jobs_[j].name << ": " << phases[static_cast<std::size_t>(p.now.load())] << ' '
           << iterations << total << " it, " << format_bytes(live);
    }
    // What a waiting job waits for, when the policy says (Salus's admission), and what holds
    // up a training job mid-iteration (regions, a group boundary): on lines of their own, so
    // that the progress line stays readable.
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      const auto id = progress_[j].job.load();
      if (id < 0) continue;
      const auto job = static_cast<memory::job_id>(id);
      const auto now = progress_[j].now.load();
      const auto reason = now == job_progress::phase::waiting    ? gate_.waiting_reason(job)
                          : now == job_progress::phase::training ? gate_.held_up_by(job)
                                                                 : std::string();
      if (!reason.empty()) line << "\n           " << jobs_[j].name << ": " << reason;
    }
    *options_.progress << line.str() << std::endl;
  }

  const run_options& options_;
  const std::vector<job_spec>& jobs_;
  const std::vector<job_progress>& progress_;
  const memory_monitor& monitor_;
  const policy_gate& gate_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

/// Sleeps until `seconds` of the gate's time; false when the run was stopped first.
bool sleep_unless_stopped(policy_gate& gate, double seconds) {
  try {
    gate.sleep_until(seconds);
    return true;
  } catch (const run_stopped&) {
    return false;
  }
}

/// A job the stop came before: listed with what the workload says of it, and no iterations.
job_result never_arrived(const job_spec& job) {
  auto result = detail::result_for(job);
  result.status = job_status::stopped;
  result.error = "the run was stopped before the job arrived";
  return result;
}

bool has_ended(job_progress::phase phase) {
  return phase == job_progress::phase::completed || phase == job_progress::phase::failed ||
         phase == job_progress::phase::stopped;
}

}  // namespace

workload_vocabulary training_vocabulary() {
  return {models::model_names(), schedule::policy_names(), models::optimizer_names()};
}

void validate_training_workload(const workload& spec, const run_options& options) {
  validate_workload(spec, options.overrides);
  if (spec.device.kind == device::backend_kind::cuda) {
#if !defined(TANDEM_HAVE_TORCH_CUDA)
    fail_at(spec, spec.device.line,
            "device kind \"cuda\": this build trains on the CPU backend only (its libtorch has no "
            "CUDA); set kind = \"cpu\", or build tandem against a CUDA libtorch "
            "(scripts/gpu-check.sh shows how)");
#endif
    if (options.overrides.planner) {
      fail_at(spec, spec.device.line,
              "--planner: " + std::string(cuda_plans_unsupported) +
                  "; plan on a [device] of kind = \"cpu\"");
    }
    if (spec.policy.planner) {
      fail_at(spec, spec.policy.planner_line,
              std::string(cuda_plans_unsupported) + "; remove [policy] planner");
    }
    for (const auto& job : spec.jobs) {
      if (!job.planner) continue;
      fail_at(spec, job.line,
              "job '" + job.name + "': " + cuda_plans_unsupported + "; remove its planner");
    }
  }
  // What a job keeps for good (its parameters and, training, their gradients and the
  // optimizer's state) needs room under some budget of the run: neither a policy nor a plan (the
  // executor moves neither) can run it otherwise. Refused now rather than failed out of memory.
  const auto most = largest_budget(spec, budget_of(spec, options.overrides));
  for (const auto& job : spec.jobs) {
    const auto parameters = static_cast<std::size_t>(
        models::make_model(job.model, to_model_options(spec, job))->parameter_count());
    const bool training = job.kind == job_kind::training;
    const auto copies =
        training ? 2 + static_cast<std::size_t>(models::optimizer_state_tensors(job.optimizer)) : 1;
    const auto least = parameters * sizeof(float) * copies;
    if (least <= most) continue;
    fail_at(spec, job.line,
            "job '" + job.name + "' (" + job.model + ", " + std::to_string(parameters) +
                " parameters) needs at least " + format_bytes(least) + " for its parameters" +
                (training ? ", their gradients and " + job.optimizer + "'s state" : "") +
                ", more than the budget of " + format_bytes(most) +
                " ever allows; raise the budget (--budget, or [device] budget) or choose a "
                "smaller model");
  }
  for (const auto& job : spec.jobs) {
    if (job.kind != job_kind::training || !planner_of(job, options.overrides) || !job.iterations)
      continue;
    if (*job.iterations < detail::planned_job_min_iterations) {
      fail_at(spec, job.line,
              "job '" + job.name + "' runs under a footprint plan, which needs at least " +
                  std::to_string(detail::planned_job_min_iterations) +
                  " iterations (one to warm up, one recorded and planned, one to settle, one "
                  "vanilla reference, then the planned ones); it has " +
                  std::to_string(*job.iterations) + ": raise iterations");
    }
  }
}

double copy_bandwidth_of(const device_spec& device) {
  // Prices plans only, and plans are refused on CUDA devices (validate_training_workload).
  if (device.kind == device::backend_kind::cuda) return 0;
  switch (device.copy_bandwidth.how) {
    case copy_rate::mode::matched:
      return torch_support::matched_copy_bandwidth();
    case copy_rate::mode::memcpy:
      return 0;
    case copy_rate::mode::fixed:
      return device.copy_bandwidth.bytes_per_s;
  }
  return 0;
}

run_result run_workload(const workload& spec, const run_options& options) {
  validate_training_workload(spec, options);
  std::vector<models::model_options> model_options;
  for (const auto& job : spec.jobs) model_options.push_back(to_model_options(spec, job));
  // The jobs as they run: with --planner in place of their own planners.
  std::vector<job_spec> jobs = spec.jobs;
  for (auto& job : jobs) job.planner = planner_of(job, options.overrides);

  detail::shared_device device({.spec = &spec,
                                .overrides = options.overrides,
                                .expected_jobs = spec.jobs.size(),
                                .timeline = options.timeline,
                                .record_allocations = options.record_allocations,
                                .faults = &options.faults});
  auto& pool = device.pool();
  auto& monitor = device.monitor();
  auto& gate = device.gate();
  auto& context = device.context();
  // Runs at once if the stop came already; unregistered (waiting for a call under way) before
  // the gate goes.
  const std::stop_callback stop_jobs(options.stop, [&gate] { gate.stop(); });

  // Arrivals in time order; equal times keep the file's order (exclusive's FIFO relies on it).
  std::vector<std::size_t> order(spec.jobs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return spec.jobs[a].arrival_s < spec.jobs[b].arrival_s;
  });

  std::vector<job_progress> progress(spec.jobs.size());
  std::vector<job_result> results(spec.jobs.size());
  std::vector<std::thread> threads;
  std::vector<applied_budget_change> budget_changes;
  {
    progress_printer printer(options, spec.jobs, progress, monitor, gate);
    // Budget changes come between arrivals, in time order (equal times: the change first). The
    // driver keeps the schedule, so that memory waits know whether a change is still to come.
    gate.set_budget_schedule(driver_budget_schedule(spec.device.budget_schedule));
    // False when the run was stopped before `time_s`.
    const auto apply_changes_until = [&](double time_s) {
      for (auto next = gate.next_budget_change(); next && *next <= time_s;
           next = gate.next_budget_change()) {
        if (!sleep_unless_stopped(gate, *next)) return false;
        for (const auto& change : gate.apply_due_budget_changes()) {
          budget_changes.push_back({change.at_s, change.bytes});
        }
      }
      return true;
    };
    try {
      for (const auto index : order) {
        const auto& job = spec.jobs[index];
        if (!apply_changes_until(job.arrival_s) || !sleep_unless_stopped(gate, job.arrival_s)) {
          break;  // stopped: no more arrivals
        }
        const auto id = pool.add_job(job.name);
        monitor.name_job(id, job.name);
        progress[index].job = id;
        const double arrival_s = gate.now();
        gate.arrive(job_info_of(job, id, arrival_s));
        threads.emplace_back([&, index, id, arrival_s] {
          results[index] = detail::train(jobs[index], model_options[index], id, arrival_s, context,
                                         progress[index]);
        });
      }
    } catch (...) {
      gate.close("the session could not start every job");
      for (auto& thread : threads) thread.join();
      throw;
    }
    // Later changes apply while jobs still run; those after the last job ends do not matter.
    for (auto next = gate.next_budget_change(); next && !gate.stop_requested();
         next = gate.next_budget_change()) {
      const bool running = std::any_of(progress.begin(), progress.end(),
                                       [](const auto& p) { return !has_ended(p.now.load()); });
      if (!running) break;
      if (std::chrono::steady_clock::now() < gate.to_time_point(*next)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      apply_changes_until(*next);
    }
    for (auto& thread : threads) thread.join();
  }
  std::vector<std::int64_t> ids;
  for (std::size_t j = 0; j < results.size(); ++j) {
    ids.push_back(progress[j].job.load());
    if (ids.back() < 0) results[j] = never_arrived(spec.jobs[j]);
  }
  auto run = device.finish(spec.source, std::move(results), ids);
  run.budget_changes = std::move(budget_changes);
  return run;
}

}  // namespace tandem::runtime
