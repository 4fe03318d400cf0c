#include "run_command.hpp"

#include <algorithm>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <vector>

#include "report_command.hpp"
#include "tandem/common/atomic_file.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/output_paths.hpp"
#include "tandem/common/units.hpp"
#include "tandem/models/zoo.hpp"
#include "tandem/report/timeline_stream.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/session.hpp"
#include "tandem/runtime/workload_policy.hpp"

namespace tandem::cli {

namespace {

// No fmt here: this file sees libtorch's include directories, and PyTorch 2.x bundles its own
// fmt headers there, which would shadow the fmt tandem links against.
void model_row(std::ostream& out, const std::string& name, const std::string& parameters,
               const std::string& persistent, const std::string& peak, const std::string& options) {
  out << std::left << std::setw(12) << name << std::right << ' ' << std::setw(12) << parameters
      << ' ' << std::setw(12) << persistent << ' ' << std::setw(12) << peak << "  " << options
      << '\n';
}

}  // namespace

int run_workload_command(const run_command_options& options, std::ostream& out,
                         std::ostream& progress, std::stop_token stop) {
  const auto spec = runtime::load_workload(options.workload, runtime::training_vocabulary());
  runtime::run_options settings;
  settings.overrides = {options.policy, options.budget, options.planner, options.policy_planner};
  runtime::validate_training_workload(spec, settings);
  check_output_paths({options.workload}, {{"--json", options.json_path},
                                          {"--timeline", options.timeline_path},
                                          {"--report", options.report_path}});
  // Opened before anything runs, so that a typo in a path costs no training time.
  std::optional<atomic_file> json;
  std::optional<atomic_file> timeline;
  if (!options.json_path.empty()) json.emplace(options.json_path, "JSON results");
  if (!options.timeline_path.empty()) timeline.emplace(options.timeline_path, "timeline");
  // The report draws the timeline too: reduced to its buckets as the run writes it, and passed
  // on to the --timeline file when there is one.
  const bool reports = !options.report_path.empty();
  std::optional<atomic_file> report_probe;
  std::optional<report::timeline_stream> report_timeline;
  if (reports) {
    report_probe.emplace(options.report_path, "report");
    std::vector<std::string> names;
    for (const auto& job : spec.jobs) names.push_back(job.name);
    report_timeline.emplace("the run's timeline", names, timeline ? &timeline->stream() : nullptr);
    settings.timeline = &*report_timeline;
  } else if (timeline) {
    settings.timeline = &timeline->stream();
  }
  if (!options.quiet) settings.progress = &progress;
  settings.progress_interval_s = options.progress_interval_s;
  settings.stop = std::move(stop);

  const auto result = runtime::run_workload(spec, settings);
  out << '\n'
      << spec.source << " under policy " << result.policy << " on " << result.device << '\n';
  runtime::print_table(result, out);
  // Out before the files: a second Ctrl-C while they are written exits at once, and a table
  // still in the buffer of a redirected stdout would be lost.
  out.flush();
  std::ostringstream results_text;
  if (json || reports) runtime::write_json(result, results_text);
  if (json) {
    json->stream() << results_text.str();
    json->commit();
    out << "results: " << options.json_path << "\n";
  }
  std::optional<report::memory_timeline> memory;
  if (reports) memory = report_timeline->finish(result.makespan_s);
  if (timeline) {
    timeline->commit();
    out << "memory timeline: " << options.timeline_path << "\n";
  }
  if (reports) {
    report_probe->abandon();
    write_report_from_text(results_text.str(), spec.source, &*memory, options.report_path, out);
  }
  return result.failed_jobs() == 0 ? 0 : 3;
}

int list_models_command(const models_command_options& options, std::ostream& out) {
  auto names = models::model_names();
  // "resnet" is the named resnets with the depth as an option: listing it again adds nothing.
  std::erase(names, "resnet");
  if (!options.only.empty()) {
    TANDEM_EXPECTS(std::find(names.begin(), names.end(), options.only) != names.end(), config_error,
                   "unknown model '" + options.only +
                       "'; run `tandem models` for the list (resnet of depth d: resnet<d>)");
    names = {options.only};
  }
  TANDEM_EXPECTS(options.batch_size > 0, config_error, "--batch must be at least 1");
  if (options.measure) {
    out << "peak memory of one training iteration at batch " << options.batch_size
        << " (default options; SGD with momentum; measured on the CPU backend's pool)\n";
  }
  model_row(out, "model", "parameters", "persistent", "peak live", "options");
  for (const auto& name : names) {
    const auto model = models::make_model(name, models::default_options(name));
    std::string persistent = "-";
    std::string peak = "-";
    if (options.measure) {
      // A one-job session: the same code path, pool and allocator as `tandem run`.
      runtime::workload spec;
      spec.source = "tandem models";
      spec.device.capacity = 16 * GiB;
      spec.device.region_size = 2 * MiB;
      spec.policy.name = "spatial";
      runtime::job_spec job;
      job.name = name;
      job.model = name;
      job.batch_size = std::max(options.batch_size, model->min_batch_size());
      job.iterations = 2;
      spec.jobs.push_back(job);
      const auto result = runtime::run_workload(spec);
      const auto& measured = result.jobs.front();
      if (measured.status == runtime::job_status::failed) {
        peak = "failed: " + measured.error;
      } else {
        persistent = format_bytes(measured.persistent_bytes);
        peak = format_bytes(measured.peak_live_bytes);
      }
    }
    std::string option_list;
    for (const auto& option : models::model_option_names(name)) {
      option_list += (option_list.empty() ? "" : " ") + option;
    }
    model_row(out, name, std::to_string(model->parameter_count()), persistent, peak, option_list);
  }
  out << "resnet: the resnet of model_options.depth (20, 56, 110 or 50)\n";
  return 0;
}

int profile_workload_command(const profile_command_options& options, std::ostream& out,
                             std::ostream& progress, std::stop_token stop) {
  const auto spec = runtime::load_workload(options.workload, runtime::training_vocabulary());
  check_output_paths({options.workload}, {{"--out", options.out_path}});
  atomic_file file(options.out_path, "profiles");
  const auto profiles =
      runtime::profile_workload(spec, options.iterations, &progress, std::move(stop));
  runtime::write_profile_json(profiles, file.stream());
  file.commit();
  int failed = 0;
  for (const auto& job : profiles.jobs) {
    out << job.name << " (" << job.model << ", batch " << job.batch_size << "): ";
    if (!job.completed) {
      out << (job.stopped ? "" : "failed: ") << job.error << '\n';
      if (!job.stopped) ++failed;
      continue;
    }
    std::vector<double> times = job.iteration_s;
    std::sort(times.begin(), times.end());
    out << times.size() << " iterations, median " << std::fixed << std::setprecision(3)
        << times[times.size() / 2] << " s; persistent " << format_bytes(job.persistent_bytes)
        << ", peak live " << format_bytes(job.peak_live_bytes) << ", peak held "
        << format_bytes(job.peak_reserved_bytes) << "; "
        << (job.last_iteration ? job.last_iteration->allocations.size() : 0)
        << " allocations and frees in the last iteration\n";
  }
  out << "profiles: " << options.out_path << '\n';
  return failed == 0 ? 0 : 3;
}

}  // namespace tandem::cli
