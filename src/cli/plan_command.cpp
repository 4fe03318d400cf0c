#include "plan_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <vector>

#include "tandem/common/atomic_file.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/common/output_paths.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/runtime/footprint_budget.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/session.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/torch/matched_copy_bandwidth.hpp"

// No fmt here: this file sees libtorch's include directories (see run_command.cpp).

namespace tandem::cli {

namespace {

/// The version of the document `--json` writes (docs/plan-output.md).
constexpr int plan_output_schema_version = 1;

/// Iterations a job is profiled for when its sequence is recorded here: the first builds the
/// optimizer's state, the second is recorded.
constexpr std::int64_t recorded_iterations = 2;

/// One training job to plan, and what became of it.
struct job_plan {
  const runtime::job_spec* spec = nullptr;
  std::string planner;
  std::optional<runtime::footprint_budget> budget;  ///< none: the planner's own choice
  std::optional<footprint::access_sequence> sequence;
  std::string source;  ///< where the sequence came from: "profile FILE" or "recorded"
  std::string error;   ///< why there is no sequence
  std::size_t budget_bytes = 0;
  footprint::plan plan;
  footprint::plan_measures measures;
};

/// Bytes per second of memcpy on this machine (what "memcpy" copy engines move): the best of
/// three copies of 64 MiB.
double measured_memcpy_bandwidth() {
  constexpr std::size_t bytes = 64 * MiB;
  std::vector<char> from(bytes, 1);
  std::vector<char> to(bytes, 0);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (took.count() > 0) best = std::max(best, static_cast<double>(bytes) / took.count());
  }
  return best > 0 ? best : 10e9;
}

/// The rate swaps are priced at: the session's resolution of the workload's copy_bandwidth,
/// with "memcpy" measured.
double copy_bandwidth_for(const runtime::workload& spec) {
  const double rate = runtime::copy_bandwidth_of(spec.device);
  return rate > 0 ? rate : measured_memcpy_bandwidth();
}

std::string describe_rate(double bytes_per_s) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1);
  if (bytes_per_s >= 1e9) {
    text << bytes_per_s / 1e9 << " GB/s";
  } else {
    text << bytes_per_s / 1e6 << " MB/s";
  }
  return text.str();
}

/// Where the rate came from, for the table's first line.
std::string describe_copy_rate(const runtime::copy_rate& rate) {
  switch (rate.how) {
    case runtime::copy_rate::mode::matched:
      return "\"auto\": matched to a V100 over PCIe 3.0, GEMM " +
             std::to_string(std::lround(torch_support::measured_gemm_flops() / 1e9)) +
             " GFLOP/s on one core";
    case runtime::copy_rate::mode::memcpy:
      return "\"memcpy\", measured";
    case runtime::copy_rate::mode::fixed:
      break;
  }
  return "as written";
}

std::string percent(double ratio) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << ratio * 100 << '%';
  return text.str();
}

std::string cost_benefit(double cbr) {
  if (std::isinf(cbr)) return "inf";
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << cbr;
  return text.str();
}

/// The jobs to plan, each with its planner (the default one where it names none) and budget.
std::vector<job_plan> jobs_to_plan(const runtime::workload& spec,
                                   const runtime::policy_overrides& overrides,
                                   const std::optional<runtime::footprint_budget>& budget) {
  std::vector<job_plan> jobs;
  for (const auto& job : spec.jobs) {
    if (job.kind != runtime::job_kind::training) continue;
    job_plan plan;
    plan.spec = &job;
    // A job that names no planner is planned by the default one.
    plan.planner =
        runtime::planner_of(job, overrides).value_or(std::string(footprint::default_planner));
    plan.budget = budget ? budget : job.plan_budget;
    jobs.push_back(std::move(plan));
  }
  TANDEM_EXPECTS(!jobs.empty(), config_error,
                 spec.source +
                     ": no training job to plan (inference jobs keep nothing for a "
                     "backward pass)");
  return jobs;
}

/// Takes each job's sequence from `profiles` when it holds one for the job (same name, model
/// and batch size).
void take_from_profile(std::vector<job_plan>& jobs, const runtime::profile_set& profiles,
                       const std::string& path, std::ostream& progress) {
  for (auto& job : jobs) {
    const auto found = std::find_if(profiles.jobs.begin(), profiles.jobs.end(),
                                    [&](const auto& p) { return p.name == job.spec->name; });
    if (found == profiles.jobs.end() || !found->sequence) {
      progress << "job " << job.spec->name << ": no access sequence in " << path
               << "; recording one\n";
      continue;
    }
    if (found->model != job.spec->model || found->batch_size != job.spec->batch_size) {
      progress << "job " << job.spec->name << ": " << path << " holds " << found->model
               << " at batch " << found->batch_size << ", not the workload's " << job.spec->model
               << " at batch " << job.spec->batch_size << "; recording one\n";
      continue;
    }
    job.sequence = found->sequence;
    job.source = "profile " + path;
  }
}

/// Records the sequence of every job that has none yet: each trained alone for two
/// iterations, as `tandem profile` does. False when stopped.
bool record_missing(std::vector<job_plan>& jobs, const runtime::workload& spec,
                    std::ostream& progress, std::stop_token stop) {
  runtime::workload missing = spec;
  missing.jobs.clear();
  for (const auto& job : jobs) {
    if (!job.sequence) missing.jobs.push_back(*job.spec);
  }
  if (missing.jobs.empty()) return true;
  const auto profiles =
      runtime::profile_workload(missing, recorded_iterations, &progress, std::move(stop));
  bool stopped = false;
  for (const auto& profile : profiles.jobs) {
    stopped |= profile.stopped;
    auto job = std::find_if(jobs.begin(), jobs.end(),
                            [&](const auto& j) { return j.spec->name == profile.name; });
    if (job == jobs.end()) continue;
    if (profile.sequence) {
      job->sequence = profile.sequence;
      job->source = "recorded";
    } else {
      job->error = profile.completed ? "no access sequence was recorded" : profile.error;
      // The pool's advice names --budget, which here is the plan's budget, not the device's.
      if (profile.error.starts_with("out of memory")) {
        if (const auto advice = job->error.find("\n  to fix:"); advice != std::string::npos) {
          job->error.erase(advice, job->error.find('\n', advice + 1) - advice);
        }
        job->error +=
            "\n  tandem plan records each job alone and unplanned, so its vanilla iteration "
            "must fit the workload's [device] budget (" +
            format_bytes(spec.device.budget != 0 ? spec.device.budget : spec.device.capacity) +
            "); --budget is the plan's. Raise the [device] budget in a copy of the "
            "workload, or record with `tandem profile` where it fits and pass --profile";
      }
    }
  }
  return !stopped;
}

void make_plan(job_plan& job, double copy_bandwidth, std::stop_token stop) {
  const footprint::cost_options costs{.copy_bandwidth = copy_bandwidth};
  const auto vanilla = footprint::predict(*job.sequence, footprint::plan{}, costs);
  job.budget_bytes = job.budget ? job.budget->bytes_for(vanilla.peak_bytes) : 0;
  const auto planner = footprint::make_planner(job.planner);
  job.plan = planner->make_plan(
      *job.sequence, {.budget_bytes = job.budget_bytes, .costs = costs, .stop = std::move(stop)});
  job.measures = footprint::measure(*job.sequence, job.plan, costs);
}

bool above_budget(const job_plan& job) {
  return job.budget_bytes != 0 && job.measures.planned_peak_bytes > job.budget_bytes;
}

void print_table(const std::vector<job_plan>& jobs, std::ostream& out) {
  // The text columns (job, model, planner) widen to their longest cell: a planner spec with
  // options ("tandem:evaluations=200") is longer than their usual 12.
  std::vector<int> widths{-12, -12, -12, 6, 13, 13, 15, 7, 7, 6, 8, 11, 12};
  for (const auto& job : jobs) {
    const std::string* texts[] = {&job.spec->name, &job.spec->model, &job.planner};
    for (std::size_t i = 0; i < 3; ++i)
      widths[i] = std::min(widths[i], -static_cast<int>(texts[i]->size()));
  }
  const auto row = [&out, &widths](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const int width = widths[i];
      if (i > 0) out << ' ';
      if (width < 0) {
        out << std::left << std::setw(-width) << cells[i];
      } else {
        out << std::right << std::setw(width) << cells[i];
      }
    }
    out << std::right << '\n';
  };
  row({"job", "model", "planner", "batch", "vanilla peak", "budget", "predicted peak", "MSR", "EOR",
       "CBR", "swapped", "recomputed", "moved"});
  for (const auto& job : jobs) {
    const auto& s = *job.spec;
    if (!job.sequence) {
      out << std::left << std::setw(-widths[0]) << s.name << std::right << ' ' << s.model
          << ": no access sequence: " << job.error << '\n';
      continue;
    }
    const auto& m = job.measures;
    row({s.name, s.model, job.planner, std::to_string(s.batch_size),
         format_bytes(m.vanilla_peak_bytes),
         job.budget_bytes != 0 ? format_bytes(job.budget_bytes) : std::string("planner's"),
         format_bytes(m.planned_peak_bytes), percent(m.msr), percent(m.eor), cost_benefit(m.cbr),
         std::to_string(m.swapped_tensors), std::to_string(m.recomputed_tensors),
         format_bytes(m.bytes_moved)});
  }
  for (const auto& job : jobs) {
    if (!job.sequence || !above_budget(job)) continue;
    out << job.spec->name << ": the predicted peak "
        << format_bytes(job.measures.planned_peak_bytes) << " is above the budget "
        << format_bytes(job.budget_bytes) << " (" << job.budget->describe() << "): the best plan "
        << job.planner << " found\n";
  }
  out << "MSR: memory saved (1 - predicted / vanilla peak); EOR: extra time (planned / vanilla "
         "iteration - 1); CBR: MSR / EOR; moved: bytes swapped out and in\n";
}

nlohmann::json to_json(const job_plan& job) {
  const auto& s = *job.spec;
  nlohmann::json entry{
      {"name", s.name},
      {"model", s.model},
      {"batch_size", s.batch_size},
      {"planner", job.planner},
      {"budget", job.budget ? nlohmann::json(job.budget->describe()) : nlohmann::json(nullptr)},
      {"budget_bytes", job.budget_bytes}};
  if (!job.sequence) {
    entry["error"] = job.error;
    entry["sequence_source"] = nullptr;
    entry["measures"] = nullptr;
    entry["plan"] = nullptr;
    return entry;
  }
  const auto& m = job.measures;
  entry["error"] = nullptr;
  entry["sequence_source"] = job.source;
  entry["measures"] = {{"vanilla_peak_bytes", m.vanilla_peak_bytes},
                       {"planned_peak_bytes", m.planned_peak_bytes},
                       {"vanilla_s", m.vanilla_s},
                       {"planned_s", m.planned_s},
                       {"msr", m.msr},
                       {"eor", m.eor},
                       // JSON has no infinity: null when nothing is lost.
                       {"cbr", std::isinf(m.cbr) ? nlohmann::json(nullptr) : nlohmann::json(m.cbr)},
                       {"swapped_tensors", m.swapped_tensors},
                       {"recomputed_tensors", m.recomputed_tensors},
                       {"bytes_moved", m.bytes_moved},
                       {"within_budget", !above_budget(job)}};
  std::stringstream plan;
  footprint::write_plan_json(job.plan, plan);
  entry["plan"] = nlohmann::json::parse(plan);
  return entry;
}

void write_json(const std::vector<job_plan>& jobs, const runtime::workload& spec, double bandwidth,
                std::ostream& out) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& job : jobs) list.push_back(to_json(job));
  const nlohmann::json document{{"schema_version", plan_output_schema_version},
                                {"workload", spec.source},
                                {"copy_bandwidth", bandwidth},
                                {"jobs", list}};
  out << document.dump(1) << '\n';
}

}  // namespace

int plan_workload_command(const plan_command_options& options, std::ostream& out,
                          std::ostream& progress, std::stop_token stop) {
  const auto spec = runtime::load_workload(options.workload, runtime::training_vocabulary());
  runtime::run_options settings;
  settings.overrides.planner = options.planner;
  runtime::validate_training_workload(spec, settings);
  std::optional<runtime::footprint_budget> budget;
  if (options.budget) {
    try {
      budget = runtime::parse_footprint_budget(*options.budget);
    } catch (const config_error& e) {
      TANDEM_FAIL(config_error, std::string("--budget: ") + e.what());
    }
  }
  auto jobs = jobs_to_plan(spec, settings.overrides, budget);
  // Read and opened before anything is recorded, so that a typo costs no training time.
  if (!options.profile_path.empty()) {
    take_from_profile(jobs, runtime::load_profile(options.profile_path), options.profile_path,
                      progress);
  }
  check_output_paths({options.workload, options.profile_path}, {{"--json", options.json_path}});
  std::optional<atomic_file> json;
  if (!options.json_path.empty()) json.emplace(options.json_path, "plans");

  // Stopped (Ctrl-C): nothing is shown or written, and the caller's exit status is the signal's.
  const auto stopped = [&](const char* while_doing) {
    progress << "tandem plan: stopped while " << while_doing << "; no plans written"
             << (json ? ", " + options.json_path + " left as it was" : std::string()) << '\n';
    if (json) json->abandon();
    return 0;
  };
  if (!record_missing(jobs, spec, progress, stop)) return stopped("recording");
  const double bandwidth = copy_bandwidth_for(spec);
  int failed = 0;
  for (auto& job : jobs) {
    if (stop.stop_requested()) break;
    if (job.sequence) {
      make_plan(job, bandwidth, stop);
    } else {
      ++failed;
    }
  }
  // A search cut short made a plan that is not the one asked for.
  if (stop.stop_requested()) return stopped("planning");
  out << spec.source << ": " << jobs.size() << " training job" << (jobs.size() == 1 ? "" : "s")
      << ", swaps priced at " << describe_rate(bandwidth) << " (copy_bandwidth "
      << describe_copy_rate(spec.device.copy_bandwidth) << ")\n";
  print_table(jobs, out);
  if (json) {
    write_json(jobs, spec, bandwidth, json->stream());
    json->commit();
    out << "plans: " << options.json_path << '\n';
  }
  return failed == 0 ? 0 : 3;
}

}  // namespace tandem::cli
