#include "tandem/runtime/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::runtime {

std::size_t run_result::failed_jobs() const {
  return static_cast<std::size_t>(
      std::count_if(jobs.begin(), jobs.end(),
                    [](const job_result& job) { return job.status == job_status::failed; }));
}

std::size_t run_result::stopped_jobs() const {
  return static_cast<std::size_t>(
      std::count_if(jobs.begin(), jobs.end(),
                    [](const job_result& job) { return job.status == job_status::stopped; }));
}

const char* to_string(job_status status) {
  switch (status) {
    case job_status::completed:
      return "completed";
    case job_status::failed:
      return "failed";
    case job_status::stopped:
      return "stopped";
  }
  return "unknown";
}

const char* to_string(job_kind kind) {
  return kind == job_kind::training ? "training" : "inference";
}

namespace {

/// Where the nearest-rank `p`-th percentile of `count` (> 0) values stands once they are sorted.
std::size_t nearest_rank_index(std::size_t count, double p) {
  TANDEM_EXPECTS(p >= 0 && p <= 100, usage_error,
                 "a percentile must be between 0 and 100, not " + std::to_string(p));
  // p * n / 100 rather than p / 100 * n: exact for whole percentiles, so that the 95th of 20
  // values is the 19th, not the 20th after rounding up 19.000000000000004.
  const double rank = std::ceil(p * static_cast<double>(count) / 100);
  const auto index = rank < 1 ? std::size_t{0} : static_cast<std::size_t>(rank) - 1;
  return std::min(index, count - 1);
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  TANDEM_EXPECTS(!values.empty(), usage_error, "the percentile of no values is undefined");
  const auto nth =
      values.begin() + static_cast<std::ptrdiff_t>(nearest_rank_index(values.size(), p));
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

void summarize_rates(job_result& job) {
  job.iterations = static_cast<std::int64_t>(job.iteration_log.size());
  const double span = job.end_s - job.first_start_s;
  if (job.iterations > 0 && span > 0) {
    job.iterations_per_s = static_cast<double>(job.iterations) / span;
    job.samples_per_s = job.iterations_per_s * static_cast<double>(job.batch_size);
  }
}

void summarize_run(run_result& run) {
  double samples = 0;
  run.makespan_s = 0;
  for (const auto& job : run.jobs) {
    run.makespan_s = std::max(run.makespan_s, job.end_s);
    samples += static_cast<double>(job.iterations * job.batch_size);
  }
  run.aggregate_samples_per_s = run.makespan_s > 0 ? samples / run.makespan_s : 0;
}

latency_summary summarize_latencies(std::vector<double> values) {
  latency_summary summary;
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  summary.count = values.size();
  summary.mean_s =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  // Sorted once: each percentile is then a position (percentile() would copy and select).
  summary.p50_s = values[nearest_rank_index(values.size(), 50)];
  summary.p95_s = values[nearest_rank_index(values.size(), 95)];
  summary.p99_s = values[nearest_rank_index(values.size(), 99)];
  summary.max_s = values.back();
  return summary;
}

completion_metrics completion_metrics_of(const run_result& run) {
  completion_metrics metrics;
  std::vector<double> completion_times;
  double queuing = 0;
  for (const auto& job : run.jobs) {
    if (job.kind != job_kind::training || job.status != job_status::completed) continue;
    // Never below 0: the parts are separate clock readings.
    queuing += std::max(0.0, job.first_start_s - job.setup_s - job.arrival_s);
    completion_times.push_back(job.end_s - job.arrival_s);
  }
  if (completion_times.empty()) return metrics;
  metrics.jobs = completion_times.size();
  const auto count = static_cast<double>(metrics.jobs);
  metrics.mean_queuing_s = queuing / count;
  metrics.mean_jct_s =
      std::accumulate(completion_times.begin(), completion_times.end(), 0.0) / count;
  metrics.p95_jct_s = percentile(std::move(completion_times), 95);
  return metrics;
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

/// A summary as an object whose count is under `count_key`; its times are null when it counts
/// nothing (never a made-up number).
nlohmann::json to_json(const latency_summary& summary, const char* count_key) {
  const auto time = [&](double seconds) {
    return summary.count == 0 ? nlohmann::json(nullptr) : nlohmann::json(seconds);
  };
  return {{count_key, summary.count},     {"mean_s", time(summary.mean_s)},
          {"p50_s", time(summary.p50_s)}, {"p95_s", time(summary.p95_s)},
          {"p99_s", time(summary.p99_s)}, {"max_s", time(summary.max_s)}};
}

/// JSON has no infinity: a CBR with nothing lost is written as null.
nlohmann::json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const footprint_result& f) {
  return {{"planner", f.planner},
          {"budget_bytes", f.budget_bytes},
          {"swapped_tensors", f.swapped_tensors},
          {"recomputed_tensors", f.recomputed_tensors},
          {"predicted_vanilla_peak_bytes", f.predicted_vanilla_peak_bytes},
          {"predicted_peak_bytes", f.predicted_peak_bytes},
          {"predicted_vanilla_iteration_s", f.predicted_vanilla_iteration_s},
          {"predicted_iteration_s", f.predicted_iteration_s},
          {"predicted_msr", f.predicted_msr},
          {"predicted_eor", f.predicted_eor},
          {"calibration", f.calibration},
          {"repriced_iteration_s", f.repriced_iteration_s},
          {"repriced_peak_bytes", f.repriced_peak_bytes},
          {"vanilla_peak_bytes", f.vanilla_peak_bytes},
          {"vanilla_iteration_s", f.vanilla_iteration_s},
          {"passive_swapped_out_bytes", f.passive_swapped_out_bytes},
          {"vanilla_predicted", f.vanilla_predicted},
          {"fallback_swapped_out_bytes", f.fallback_swapped_out_bytes},
          {"last_plan_fallback_bytes", f.last_plan_fallback_bytes},
          {"refits", f.refits},
          {"planned_iterations", f.planned_iterations},
          {"planned_peak_bytes", f.planned_peak_bytes},
          {"planned_iteration_s", f.planned_iteration_s},
          {"msr", f.msr},
          {"eor", f.eor},
          {"cbr", finite_or_null(f.cbr)},
          {"swapped_out_bytes", f.swapped_out_bytes},
          {"swapped_in_bytes", f.swapped_in_bytes},
          {"recomputations", f.recomputations},
          {"stall_s", f.stall_s},
          {"recompute_s", f.recompute_s},
          {"missed_decisions", f.missed_decisions},
          {"diverged_iterations", f.diverged_iterations},
          {"evicted_bytes", f.evicted_bytes},
          {"host_read_bytes", f.host_read_bytes},
          {"replans", f.replans},
          {"drift_replans", f.drift_replans}};
}

nlohmann::json to_json(const job_result& job) {
  nlohmann::json iterations = nlohmann::json::array();
  for (const auto& it : job.iteration_log) {
    nlohmann::json entry{{"start_s", it.start_s},
                         {"end_s", it.end_s},
                         {"loss", it.loss},
                         {"peak_bytes", it.peak_bytes},
                         {"requested_s", it.requested_s}};
    // Only where they say something: a 100-job trace has 20,000 iterations, most of them plain
    // and never held up mid-way.
    if (!it.plan.empty()) entry["plan"] = it.plan;
    if (it.traffic.swapped_out_bytes > 0) entry["swapped_out_bytes"] = it.traffic.swapped_out_bytes;
    if (it.traffic.swapped_in_bytes > 0) entry["swapped_in_bytes"] = it.traffic.swapped_in_bytes;
    if (it.traffic.recompute_s > 0) entry["recompute_s"] = it.traffic.recompute_s;
    if (it.memory_wait_s > 0) entry["memory_wait_s"] = it.memory_wait_s;
    if (it.group_wait_s > 0) entry["group_wait_s"] = it.group_wait_s;
    iterations.push_back(std::move(entry));
  }
  nlohmann::json restarted = nlohmann::json::array();
  for (const auto& attempt : job.restarted_attempts) {
    restarted.push_back({{"start_s", attempt.start_s}, {"end_s", attempt.end_s}});
  }
  return {{"name", job.name},
          {"kind", to_string(job.kind)},
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
          {"restarts", job.restarts},
          {"restarted_attempts", restarted},
          {"iterations_per_s", job.iterations_per_s},
          {"samples_per_s", job.samples_per_s},
          {"peak_live_bytes", job.peak_live_bytes},
          {"peak_reserved_bytes", job.peak_reserved_bytes},
          {"persistent_bytes", job.persistent_bytes},
          {"first_loss", optional_number(job.first_loss)},
          {"last_loss", optional_number(job.last_loss)},
          {"iteration_log", iterations},
          {"unfinished_start_s", optional_number(job.unfinished_start_s)},
          {"policy_stats", to_json(job.policy_stats)},
          {"latency", job.latency ? to_json(*job.latency, "requests") : nlohmann::json(nullptr)},
          {"footprint", job.footprint ? to_json(*job.footprint) : nlohmann::json(nullptr)}};
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
    } else if (statistic.value == std::trunc(statistic.value)) {
      text += fmt::format("{} {:.0f}", statistic.name, statistic.value);  // a count, in full
    } else {
      text += fmt::format("{} {:.2f}", statistic.name, statistic.value);  // a ratio (stretch)
    }
  }
  return text;
}

std::string loss_text(const job_result& job) {
  if (job.kind == job_kind::inference) return "(inference)";
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
  const auto completion = completion_metrics_of(result);
  const auto completion_time = [&](double seconds) {
    return completion.jobs == 0 ? nlohmann::json(nullptr) : nlohmann::json(seconds);
  };
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
                                {"stopped", result.stopped},
                                {"stopped_jobs", result.stopped_jobs()},
                                {"completed_training_jobs", completion.jobs},
                                {"mean_queuing_s", completion_time(completion.mean_queuing_s)},
                                {"mean_jct_s", completion_time(completion.mean_jct_s)},
                                {"p95_jct_s", completion_time(completion.p95_jct_s)},
                                {"switches", to_json(result.switches, "count")},
                                {"policy_stats", to_json(result.policy_stats)},
                                {"warnings", result.warnings},
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
  const bool serves = std::any_of(result.jobs.begin(), result.jobs.end(),
                                  [](const auto& job) { return job.kind == job_kind::inference; });
  if (serves) {
    out << fmt::format("{:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "inference", "requests",
                       "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms");
    for (const auto& job : result.jobs) {
      if (job.kind != job_kind::inference) continue;
      const auto latency = job.latency.value_or(latency_summary{});
      out << fmt::format("{:<14} {:>9} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}\n", job.name,
                         latency.count, latency.mean_s * 1e3, latency.p50_s * 1e3,
                         latency.p95_s * 1e3, latency.p99_s * 1e3, latency.max_s * 1e3);
    }
  }
  const bool planned = std::any_of(result.jobs.begin(), result.jobs.end(),
                                   [](const auto& job) { return job.footprint.has_value(); });
  if (planned) {
    out << fmt::format("{:<14} {:>12} {:>11} {:>11} {:>7} {:>7} {:>7} {:>11} {:>9} {:>8}\n",
                       "footprint", "planner", "vanilla pk", "planned pk", "MSR", "EOR", "CBR",
                       "swapped", "recomp.", "stall s");
    for (const auto& job : result.jobs) {
      if (!job.footprint) continue;
      const auto& f = *job.footprint;
      out << fmt::format(
          "{:<14} {:>12} {:>11} {:>11} {:>7.3f} {:>7.3f} {:>7} {:>11} {:>9} {:>8.2f}\n", job.name,
          f.planner, format_bytes(f.vanilla_peak_bytes), format_bytes(f.planned_peak_bytes), f.msr,
          f.eor, std::isfinite(f.cbr) ? fmt::format("{:.2f}", f.cbr) : "inf",
          format_bytes(f.swapped_out_bytes), f.recomputations, f.stall_s);
      if (f.passive_swapped_out_bytes > 0) {
        out << "  " << job.name << ": the budget was below its vanilla peak; before the plan, "
            << format_bytes(f.passive_swapped_out_bytes)
            << " of its tensors went to host memory on demand (passive swapping)"
            << (f.vanilla_predicted ? "; its vanilla peak and time are the cost model's predictions"
                                    : "")
            << "\n";
      }
      if (f.fallback_swapped_out_bytes > 0) {
        out << "  " << job.name << ": its plan did not fit the budget by itself; passive swapping "
            << "moved " << format_bytes(f.fallback_swapped_out_bytes)
            << " more out in the planned iterations";
        if (f.refits > 0) {
          out << "; planned again for less " << f.refits << (f.refits == 1 ? " time" : " times")
              << " (now for " << format_bytes(f.budget_bytes) << "), "
              << (f.last_plan_fallback_bytes == 0
                      ? "its last plan held by itself"
                      : "its last plan still needed " + format_bytes(f.last_plan_fallback_bytes) +
                            " (lower plan_budget to avoid it)");
        } else {
          out << " (lower plan_budget to avoid it)";
        }
        out << "\n";
      }
      if (f.evicted_bytes > 0) {
        out << "  " << job.name << ": where no wait would have served (every running iteration "
            << "waiting for another), its executor swapped " << format_bytes(f.evicted_bytes)
            << " of its plan's tensors out of turn to make room instead of failing\n";
      }
      if (f.host_read_bytes > 0) {
        out << "  " << job.name << ": where no memory would come for a tensor it needed back, "
            << "its operations read " << format_bytes(f.host_read_bytes)
            << " of them in host memory instead of failing\n";
      }
      if (f.planned_iterations == 0 && job.status == job_status::completed) {
        out << "  " << job.name
            << ": no iteration ran under the plan (a planned job needs 5 iterations: warm-up, "
               "recorded, settling, vanilla reference, planned)\n";
      } else if (f.planned_iterations == 0) {
        out << "  " << job.name << ": no iteration ran under the plan (the job "
            << (job.status == job_status::stopped ? "was stopped" : "failed")
            << " before its first planned iteration)\n";
      }
    }
  }
  for (const auto& job : result.jobs) {
    if (job.restarts == 0) continue;
    out << fmt::format(
        "{}: {} iteration{} restarted (no wait would have brought the memory it asked for: "
        "every running iteration waited for another, or its own regions had room only in "
        "pieces; it let go, returned what it took and ran again)\n",
        job.name, job.restarts, job.restarts == 1 ? "" : "s");
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
  for (const auto& warning : result.warnings) out << "warning: " << warning << "\n";
  const auto stopped = result.stopped_jobs();
  out << fmt::format(
      "system: policy {}, makespan {:.2f} s, {:.1f} samples/s, peak held {} of budget {} "
      "(peak live {}), {} of {} jobs failed{}\n",
      result.policy, result.makespan_s, result.aggregate_samples_per_s,
      format_bytes(result.peak_reserved_bytes), format_bytes(result.budget_bytes),
      format_bytes(result.peak_live_bytes), result.failed_jobs(), result.jobs.size(),
      stopped > 0 ? fmt::format(", {} stopped before the end", stopped) : "");
  if (result.stopped) {
    out << "        the run was stopped early: the figures cover what was done until then\n";
  }
  const auto completion = completion_metrics_of(result);
  if (completion.jobs > 0) {
    out << fmt::format(
        "        {} training job{} completed: mean queuing {:.2f} s, mean JCT {:.2f} s, p95 JCT "
        "{:.2f} s\n",
        completion.jobs, completion.jobs == 1 ? "" : "s", completion.mean_queuing_s,
        completion.mean_jct_s, completion.p95_jct_s);
  }
  if (result.switches.count > 0) {
    out << fmt::format("        {} job switch{}: p50 {:.3f} ms, p95 {:.3f} ms, max {:.3f} ms\n",
                       result.switches.count, result.switches.count == 1 ? "" : "es",
                       result.switches.p50_s * 1e3, result.switches.p95_s * 1e3,
                       result.switches.max_s * 1e3);
  }
}

}  // namespace tandem::runtime
