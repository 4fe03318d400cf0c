#include "sim_command.hpp"

#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <utility>
#include <vector>

#include "report_command.hpp"
#include "tandem/common/atomic_file.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/common/output_paths.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/report/timeline_stream.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/sim/workload_sim.hpp"

namespace tandem::cli {
namespace {

// No fmt here: the tandem executable sees libtorch's include directories (see run_command.cpp).

struct comparison_row {
  std::string batch;
  std::string policy;
  runtime::run_result result;
};

/// Jobs of different models make aggregate samples/s a mix of units; each job's own ratio is
/// what Zico Fig. 8 compares. Listed for a few jobs only.
constexpr std::size_t max_jobs_listed = 4;

std::string per_job_ratios(const runtime::run_result& result,
                           const runtime::run_result& reference) {
  if (result.jobs.size() > max_jobs_listed || result.jobs.size() != reference.jobs.size())
    return "";
  std::ostringstream text;
  text << std::fixed << std::setprecision(2);
  for (std::size_t j = 0; j < result.jobs.size(); ++j) {
    const double base = reference.jobs[j].samples_per_s;
    text << "  " << result.jobs[j].name << ' '
         << (base > 0 ? result.jobs[j].samples_per_s / base : 0) << 'x';
  }
  return text.str();
}

void print_comparison(const std::vector<comparison_row>& rows, std::ostream& out) {
  out << std::left << std::setw(7) << "batch" << std::setw(11) << "policy" << std::right
      << std::setw(12) << "samples/s" << std::setw(9) << "ratio" << std::setw(12) << "makespan"
      << std::setw(12) << "avg queue" << std::setw(12) << "avg JCT" << std::setw(12) << "95% JCT"
      << std::setw(13) << "peak held" << std::setw(8) << "failed"
      << (rows.front().result.jobs.size() <= max_jobs_listed ? "  per job (samples/s ratio)" : "")
      << '\n';
  const runtime::run_result* reference = nullptr;
  std::string reference_batch;
  for (const auto& row : rows) {
    // Ratios against the first policy of the same batch.
    if (reference == nullptr || row.batch != reference_batch) {
      reference = &row.result;
      reference_batch = row.batch;
    }
    const double base = reference->aggregate_samples_per_s;
    std::ostringstream ratio;
    ratio << std::fixed << std::setprecision(2)
          << (base > 0 ? row.result.aggregate_samples_per_s / base : 0) << 'x';
    // Salus Table 2's figures over the completed jobs.
    const auto completion = runtime::completion_metrics_of(row.result);
    out << std::left << std::setw(7) << row.batch << std::setw(11) << row.policy << std::right
        << std::fixed << std::setprecision(1) << std::setw(12) << row.result.aggregate_samples_per_s
        << std::setw(9) << ratio.str() << std::setprecision(2) << std::setw(11)
        << row.result.makespan_s << 's' << std::setw(11) << completion.mean_queuing_s << 's'
        << std::setw(11) << completion.mean_jct_s << 's' << std::setw(11) << completion.p95_jct_s
        << 's' << std::setw(13) << format_bytes(row.result.peak_reserved_bytes) << std::setw(8)
        << row.result.failed_jobs() << per_job_ratios(row.result, *reference) << '\n';
  }
}

std::string milliseconds(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(seconds < 0.01 ? 2 : 1) << seconds * 1e3 << " ms";
  return text.str();
}

/// One line per planned profile (jobs that share one are listed together): the plan's budget,
/// and the cost model's peak and iteration with nothing planned against under the plan.
void print_plans(const std::vector<sim::planned_job_summary>& plans, const std::string& batch,
                 std::ostream& out) {
  // Everything but the job's name: identical jobs share one plan.
  const auto same_plan = [](const sim::planned_job_summary& a, const sim::planned_job_summary& b) {
    return a.planner == b.planner && a.budget == b.budget && a.budget_bytes == b.budget_bytes &&
           a.decisions == b.decisions && a.planned_peak_bytes == b.planned_peak_bytes &&
           a.vanilla_peak_bytes == b.vanilla_peak_bytes && a.planned_s == b.planned_s &&
           a.vanilla_s == b.vanilla_s;
  };
  std::vector<bool> printed(plans.size(), false);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (printed[i]) continue;
    const auto& plan = plans[i];
    std::string jobs;
    for (std::size_t j = i; j < plans.size(); ++j) {
      if (printed[j] || !same_plan(plan, plans[j])) continue;
      printed[j] = true;
      jobs += (jobs.empty() ? "" : ", ") + plans[j].job;
    }
    out << "plan " << (batch.empty() ? "" : "(batch " + batch + ") ") << "for " << jobs << ": "
        << plan.planner << " for " << format_bytes(plan.budget_bytes) << " (" << plan.budget
        << "), " << plan.decisions << " swaps and recomputes; peak "
        << format_bytes(plan.vanilla_peak_bytes) << " -> " << format_bytes(plan.planned_peak_bytes)
        << " (regions held " << format_bytes(plan.vanilla_held_bytes) << " -> "
        << format_bytes(plan.planned_held_bytes) << "), iteration " << milliseconds(plan.vanilla_s)
        << " -> " << milliseconds(plan.planned_s) << " (stalls " << milliseconds(plan.stall_s)
        << ", recompute " << milliseconds(plan.recompute_s) << ", "
        << format_bytes(plan.swapped_out_bytes) << " swapped out at " << std::fixed
        << std::setprecision(1) << plan.copy_bandwidth / 1e9 << " GB/s)\n";
  }
}

}  // namespace

std::string planner_names_text() {
  return join_names(footprint::planner_spellings()) + " (" +
         std::string(footprint::default_planner) + ")";
}

int sim_workload_command(const sim_command_options& options, std::ostream& out) {
  sim::sim_setup setup;
  setup.gpu = options.gpu;
  setup.gpu_memory = options.gpu_memory;
  runtime::profile_set recorded;
  if (!options.profiles_path.empty()) {
    recorded = runtime::load_profile(options.profiles_path);
    setup.recorded = &recorded;
  }
  setup.overrides = {options.policy, options.budget, std::nullopt, options.policy_planner};
  setup.options.seed = options.seed;
  setup.options.jitter = options.jitter;
  // A batch sweep reports the batches at which a job cannot fit as failed rows.
  setup.refuse_jobs_that_never_fit = options.sweep_batch.empty();
  if (options.planner) {
    setup.planning = sim::job_planning{
        .planner = *options.planner,
        .budget = options.plan_budget ? std::optional(sim::parse_plan_budget(*options.plan_budget))
                                      : std::nullopt};
  }
  TANDEM_EXPECTS(options.planner || !options.plan_budget, config_error,
                 "--plan-budget " + options.plan_budget.value_or("") +
                     " is the budget of a footprint plan: add --planner NAME");
  TANDEM_EXPECTS(options.jitter >= 0 && options.jitter <= 1, config_error,
                 "--jitter must be between 0 and 1 (a relative spread of iteration times)");
  const auto spec = runtime::load_workload(options.workload, sim::simulation_vocabulary(setup));

  // Written whole or not at all: a simulation interrupted by Ctrl-C leaves the files as they
  // were.
  check_output_paths({options.workload, options.profiles_path},
                     {{"--json", options.json_path},
                      {"--timeline", options.timeline_path},
                      {"--report", options.report_path}});
  std::optional<atomic_file> json;
  std::optional<atomic_file> timeline;
  if (!options.json_path.empty()) json.emplace(options.json_path, "JSON results");
  TANDEM_EXPECTS(!options.policy || options.compare.empty(), config_error,
                 "--policy " + options.policy.value_or("") +
                     " and --compare both choose the policy; give the policies to compare to "
                     "--compare alone");
  const bool single = options.compare.empty() && options.sweep_batch.empty();
  if (!options.timeline_path.empty()) {
    TANDEM_EXPECTS(single, config_error,
                   "--timeline records one run; drop --compare and --sweep-batch to use it");
    timeline.emplace(options.timeline_path, "timeline");
  }
  // The report draws the timeline too: reduced to its buckets as the simulation writes it, and
  // passed on to the --timeline file when there is one. The report is checked for writability
  // now: a typo costs no simulation time.
  std::optional<atomic_file> report_probe;
  if (!options.report_path.empty()) report_probe.emplace(options.report_path, "report");
  std::optional<report::timeline_stream> report_timeline;
  if (single && report_probe) {
    std::vector<std::string> names;
    for (const auto& job : spec.jobs) names.push_back(job.name);
    report_timeline.emplace("the simulation's timeline", names,
                            timeline ? &timeline->stream() : nullptr);
    setup.options.timeline = &*report_timeline;
  } else if (timeline) {
    setup.options.timeline = &timeline->stream();
  }

  if (single) {
    sim::validate_simulation(spec, setup);
    std::vector<sim::planned_job_summary> plans;
    const auto result = sim::simulate_workload(spec, setup, &plans);
    out << spec.source << " under policy " << result.policy << " on " << result.device << " (seed "
        << options.seed << ")\n";
    runtime::print_table(result, out);
    print_plans(plans, "", out);
    std::ostringstream results_text;
    runtime::write_json(result, results_text);
    if (json) {
      json->stream() << results_text.str();
      json->commit();
      out << "results: " << options.json_path << "\n";
    }
    std::optional<report::memory_timeline> memory;
    if (report_timeline) memory = report_timeline->finish(result.makespan_s);
    if (timeline) {
      timeline->commit();
      out << "timeline: " << options.timeline_path << "\n";
    }
    if (report_probe) {
      report_probe->abandon();
      write_report_from_text(results_text.str(), spec.source, &*memory, options.report_path, out);
    }
    return result.failed_jobs() == 0 ? 0 : 3;
  }

  std::vector<std::optional<std::int64_t>> batches;
  for (const auto batch : options.sweep_batch) batches.emplace_back(batch);
  if (batches.empty()) batches.emplace_back(std::nullopt);
  auto policies = options.compare;
  if (policies.empty()) policies.push_back(runtime::policy_name(spec, setup.overrides));
  // Every combination is checked before the first runs: a typo costs no simulation time.
  for (const auto& batch : batches) {
    for (const auto& policy : policies) {
      auto each = setup;
      each.batch_size = batch;
      each.overrides.policy = policy;
      sim::validate_simulation(spec, each);
    }
  }
  std::vector<comparison_row> rows;
  std::vector<std::pair<std::string, std::vector<sim::planned_job_summary>>> plans;
  for (const auto& batch : batches) {
    const auto label = batch ? std::to_string(*batch) : "file";
    for (const auto& policy : policies) {
      auto each = setup;
      each.batch_size = batch;
      each.overrides.policy = policy;
      // The plans do not depend on the policy: kept from the batch's first run.
      std::vector<sim::planned_job_summary> batch_plans;
      rows.push_back({label, policy, sim::simulate_workload(spec, each, &batch_plans)});
      if (policy == policies.front()) plans.emplace_back(batch ? label : "", batch_plans);
    }
  }
  out << spec.source << " on " << rows.front().result.device << " (seed " << options.seed
      << "; ratio: aggregate samples/s against the first policy of the row's batch)\n";
  print_comparison(rows, out);
  for (const auto& [batch, batch_plans] : plans) print_plans(batch_plans, batch, out);
  std::ostringstream results_text;
  results_text << "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) results_text << ",\n";
    runtime::write_json(rows[i].result, results_text);
  }
  results_text << "]\n";
  if (json) {
    json->stream() << results_text.str();
    json->commit();
    out << "results: " << options.json_path << "\n";
  }
  if (report_probe) {
    report_probe->abandon();
    write_report_from_text(results_text.str(), spec.source, nullptr, options.report_path, out);
  }
  return 0;
}

}  // namespace tandem::cli
