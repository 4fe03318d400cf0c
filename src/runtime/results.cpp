#include "tandem/runtime/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tandem/common/units.hpp"

namespace tandem::runtime {

std::size_t run_result::failed_jobs() const {
  return static_cast<std::size_t>(
      std::count_if(jobs.begin(), jobs.end(),
                    [](const job_result& job) { return job.status == job_status::failed; }));
}

const char* to_string(job_status status) {
  return status == job_status::completed ? "completed" : "failed";
}

namespace {

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const std::vector<schedule::policy_statistic>& statistics) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& statistic : statistics) object[statistic.name] = statistic.value;
  return object;
}

nlohmann::json to_json(const job_result& job) {
  nlohmann::json iterations = nlohmann::json::array();
  for (const auto& it : job.iteration_log) {
    iterations.push_back({{"start_s", it.start_s},
                          {"end_s", it.end_s},
                          {"loss", it.loss},
                          {"peak_bytes", it.peak_bytes}});
  }
  return {{"name", job.name},
          {"model", job.model},
          {"batch_size", job.batch_size},
          {"threads", job.threads},
          {"status", to_string(job.status)},
          {"error", job.error},
          {"out_of_memory", job.out_of_memory},
          {"arrival_s", job.arrival_s},
          {"first_start_s", job.first_start_s},
          {"end_s", job.end_s},
          {"setup_s", job.setup_s},
          {"wait_s", job.wait_s},
          {"iterations", job.iterations},
          {"iterations_per_s", job.iterations_per_s},
          {"samples_per_s", job.samples_per_s},
          {"peak_live_bytes", job.peak_live_bytes},
          {"peak_reserved_bytes", job.peak_reserved_bytes},
          {"persistent_bytes", job.persistent_bytes},
          {"first_loss", optional_number(job.first_loss)},
          {"last_loss", optional_number(job.last_loss)},
          {"iteration_log", iterations},
          {"policy_stats", to_json(job.policy_stats)}};
}

std::string statistics_text(const std::vector<schedule::policy_statistic>& statistics) {
  std::string text;
  for (const auto& statistic : statistics) {
    text += text.empty() ? "" : ", ";
    if (statistic.name.ends_with("_bytes")) {
      text += fmt::format("{} {}", statistic.name.substr(0, statistic.name.size() - 6),
                          format_bytes(static_cast<std::size_t>(statistic.value)));
    } else if (statistic.name.ends_with("_s")) {
      text += fmt::format("{} {:.3f} s", statistic.name.substr(0, statistic.name.size() - 2),
                          statistic.value);
    } else {
      text += fmt::format("{} {:g}", statistic.name, statistic.value);
    }
  }
  return text;
}

std::string loss_text(const job_result& job) {
  if (!job.first_loss || !job.last_loss) return "-";
  return fmt::format("{:.3f} -> {:.3f}", *job.first_loss, *job.last_loss);
}

}  // namespace

void write_json(const run_result& result, std::ostream& out) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& job : result.jobs) jobs.push_back(to_json(job));
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& change : result.budget_changes) {
    changes.push_back({{"at_s", change.at_s}, {"bytes", change.bytes}});
  }
  const nlohmann::json document{{"schema_version", results_schema_version},
                                {"workload", result.workload},
                                {"policy", result.policy},
                                {"device", result.device},
                                {"capacity_bytes", result.capacity_bytes},
                                {"budget_bytes", result.budget_bytes},
                                {"budget_changes", changes},
                                {"makespan_s", result.makespan_s},
                                {"aggregate_samples_per_s", result.aggregate_samples_per_s},
                                {"peak_live_bytes", result.peak_live_bytes},
                                {"peak_reserved_bytes", result.peak_reserved_bytes},
                                {"failed_jobs", result.failed_jobs()},
                                {"policy_stats", to_json(result.policy_stats)},
                                {"jobs", jobs}};
  out << document.dump(2) << '\n';
}

void print_table(const run_result& result, std::ostream& out) {
  out << fmt::format("{:<14} {:>9} {:>7} {:>9} {:>10} {:>9} {:>8} {:>11} {:>11}  {}\n", "job",
                     "status", "iters", "iter/s", "samples/s", "finish_s", "wait_s", "peak live",
                     "peak held", "loss");
  for (const auto& job : result.jobs) {
    out << fmt::format(
        "{:<14} {:>9} {:>7} {:>9.2f} {:>10.1f} {:>9.2f} {:>8.2f} {:>11} {:>11}  {}\n", job.name,
        to_string(job.status), job.iterations, job.iterations_per_s, job.samples_per_s, job.end_s,
        job.wait_s, format_bytes(job.peak_live_bytes), format_bytes(job.peak_reserved_bytes),
        loss_text(job));
  }
  if (!result.budget_changes.empty()) {
    out << "budget: " << format_bytes(result.budget_bytes);
    for (const auto& change : result.budget_changes) {
      out << fmt::format(" -> {} at {:.1f} s", format_bytes(change.bytes), change.at_s);
    }
    out << "\n";
  }
  for (const auto& job : result.jobs) {
    if (!job.policy_stats.empty()) {
      out << result.policy << " for " << job.name << ": " << statistics_text(job.policy_stats)
          << "\n";
    }
  }
  if (!result.policy_stats.empty()) {
    out << result.policy << " for all jobs: " << statistics_text(result.policy_stats) << "\n";
  }
  for (const auto& job : result.jobs) {
    if (job.status == job_status::failed)
      out << "job " << job.name << " failed: " << job.error << "\n";
  }
  out << fmt::format(
      "system: policy {}, makespan {:.2f} s, {:.1f} samples/s, peak held {} of budget {} "
      "(peak live {}), {} of {} jobs failed\n",
      result.policy, result.makespan_s, result.aggregate_samples_per_s,
      format_bytes(result.peak_reserved_bytes), format_bytes(result.budget_bytes),
      format_bytes(result.peak_live_bytes), result.failed_jobs(), result.jobs.size());
}

}  // namespace tandem::runtime
