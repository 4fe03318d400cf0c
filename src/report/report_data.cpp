#include "tandem/report/report_data.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "tandem/common/error.hpp"

namespace tandem::report {
namespace {

/// Seconds as whole microseconds.
std::int64_t microseconds(const nlohmann::json& seconds) {
  return seconds.is_number() ? std::llround(seconds.get<double>() * 1e6) : 0;
}

/// A job's iterations as bars: requested, start and end of each, in microseconds, each the
/// difference from the number before it (the first from 0). A log from before `requested_s`
/// existed waits for nothing: requested = start.
nlohmann::json bars_of(const nlohmann::json& log) {
  auto bars = nlohmann::json::array();
  std::int64_t previous = 0;
  const auto push = [&](std::int64_t value) {
    bars.push_back(value - previous);
    previous = value;
  };
  for (const auto& iteration : log) {
    const auto start = microseconds(iteration["start_s"]);
    push(iteration.contains("requested_s") ? microseconds(iteration["requested_s"]) : start);
    push(start);
    push(microseconds(iteration["end_s"]));
  }
  return bars;
}

std::size_t bytes_of(const nlohmann::json& entry, const char* key) {
  const auto found = entry.find(key);
  return found != entry.end() && found->is_number() ? found->get<std::size_t>() : 0;
}

/// What a job's iterations did beyond running, flat and sparse (a 100-job trace has 20,000
/// iterations, most of them plain and never held up): the plans they ran under as runs of
/// consecutive iterations ([first, count, plan index, ...] into `plans`), their waits mid-way
/// ([iteration, memory us, group us, ...]), their swap and recompute traffic ([iteration, bytes
/// out, bytes in, recompute us, ...]), and the tries cut short ([start us, end us, ...]).
void add_iteration_marks(const nlohmann::json& job, nlohmann::json& entry) {
  auto plans = nlohmann::json::array();
  auto runs = nlohmann::json::array();
  auto waits = nlohmann::json::array();
  auto traffic = nlohmann::json::array();
  const auto& log = job["iteration_log"];
  std::string open_plan;  // the plan of the run under way; empty: none
  for (std::size_t i = 0; i < log.size(); ++i) {
    const auto& iteration = log[i];
    const auto plan = iteration.value("plan", std::string());
    if (!plan.empty() && plan == open_plan) {
      runs[runs.size() - 2] = runs[runs.size() - 2].get<std::size_t>() + 1;
    } else if (!plan.empty()) {
      std::size_t index = 0;
      while (index < plans.size() && plans[index] != plan) ++index;
      if (index == plans.size()) plans.push_back(plan);
      for (const std::size_t value : {i, std::size_t{1}, index}) runs.push_back(value);
    }
    open_plan = plan;
    const auto memory = microseconds(iteration.value("memory_wait_s", nlohmann::json(0)));
    const auto group = microseconds(iteration.value("group_wait_s", nlohmann::json(0)));
    if (memory > 0 || group > 0) {
      for (const std::int64_t value : {static_cast<std::int64_t>(i), memory, group})
        waits.push_back(value);
    }
    const auto out = bytes_of(iteration, "swapped_out_bytes");
    const auto in = bytes_of(iteration, "swapped_in_bytes");
    const auto recompute = microseconds(iteration.value("recompute_s", nlohmann::json(0)));
    if (out > 0 || in > 0 || recompute > 0) {
      traffic.push_back(i);
      traffic.push_back(out);
      traffic.push_back(in);
      traffic.push_back(recompute);
    }
  }
  auto restarted = nlohmann::json::array();
  for (const auto& attempt : job.value("restarted_attempts", nlohmann::json::array())) {
    restarted.push_back(microseconds(attempt["start_s"]));
    restarted.push_back(microseconds(attempt["end_s"]));
  }
  entry["plans"] = std::move(plans);
  entry["plan_runs"] = std::move(runs);
  entry["waits"] = std::move(waits);
  entry["traffic"] = std::move(traffic);
  entry["restarted"] = std::move(restarted);
  entry.erase("restarted_attempts");
}

nlohmann::json run_data(const nlohmann::json& results, const std::string& source,
                        const memory_timeline* timeline) {
  nlohmann::json data{{"format", report_data_format},
                      {"kind", "run"},
                      {"title", results.value("workload", source)},
                      {"source", source}};
  auto system = results;
  system.erase("jobs");
  data["system"] = std::move(system);
  auto jobs = nlohmann::json::array();
  for (const auto& job : results["jobs"]) {
    auto entry = job;
    entry.erase("iteration_log");
    entry["bars"] = bars_of(job["iteration_log"]);
    add_iteration_marks(job, entry);
    jobs.push_back(std::move(entry));
  }
  data["jobs"] = std::move(jobs);
  data["memory"] = timeline != nullptr ? to_json(*timeline) : nlohmann::json(nullptr);
  return data;
}

/// The jobs' common batch size, or "file" when they differ (the workload's own sizes).
std::string batch_label(const nlohmann::json& run) {
  std::string label;
  for (const auto& job : run["jobs"]) {
    const auto batch = std::to_string(job.value("batch_size", std::int64_t{0}));
    if (!label.empty() && label != batch) return "file";
    label = batch;
  }
  return label.empty() ? "file" : label;
}

nlohmann::json comparison_data(const nlohmann::json& runs, const std::string& source) {
  const auto& first = runs.front();
  nlohmann::json data{{"format", report_data_format},
                      {"kind", "comparison"},
                      {"title", first.value("workload", source)},
                      {"source", source},
                      {"device", first.value("device", "")}};
  auto rows = nlohmann::json::array();
  std::string reference_batch;
  double reference = 0;
  for (const auto& run : runs) {
    const auto batch = batch_label(run);
    const double samples = run["aggregate_samples_per_s"].get<double>();
    // Ratios against the first policy of the same batch, as `tandem sim --compare` prints them.
    if (rows.empty() || batch != reference_batch) {
      reference_batch = batch;
      reference = samples;
    }
    auto jobs = nlohmann::json::array();
    for (const auto& job : run["jobs"]) {
      jobs.push_back({{"name", job["name"]},
                      {"batch_size", job.value("batch_size", std::int64_t{0})},
                      {"status", job["status"]},
                      {"samples_per_s", job["samples_per_s"]}});
    }
    rows.push_back({{"batch", batch},
                    {"policy", run["policy"]},
                    {"aggregate_samples_per_s", samples},
                    {"ratio", reference > 0 ? nlohmann::json(samples / reference) : nullptr},
                    {"makespan_s", run["makespan_s"]},
                    {"mean_queuing_s", run.value("mean_queuing_s", nlohmann::json(nullptr))},
                    {"mean_jct_s", run.value("mean_jct_s", nlohmann::json(nullptr))},
                    {"p95_jct_s", run.value("p95_jct_s", nlohmann::json(nullptr))},
                    {"peak_reserved_bytes", run["peak_reserved_bytes"]},
                    {"budget_bytes", run["budget_bytes"]},
                    {"failed_jobs", run.value("failed_jobs", std::int64_t{0})},
                    {"jobs", jobs}});
  }
  data["rows"] = std::move(rows);
  return data;
}

/// "scrooge" or "scrooge ramp_start=0.6": what tells a swept row from the others.
std::string maxbatch_label(const nlohmann::json& row, const std::string& swept_key) {
  std::string label = row["policy"].get<std::string>();
  if (!swept_key.empty() && row.contains("policy_options") &&
      row["policy_options"].contains(swept_key)) {
    label += " " + swept_key + "=" + row["policy_options"][swept_key].dump();
  }
  return label;
}

nlohmann::json maxbatch_data(const nlohmann::json& search, const std::string& source) {
  nlohmann::json data{{"format", report_data_format},
                      {"kind", "maxbatch"},
                      {"title", search["workload"]},
                      {"source", source}};
  for (const char* key : {"workload", "job", "model", "jobs", "iterations", "simulated", "planner",
                          "plan_budget", "device", "budget_bytes"}) {
    data[key] = search.value(key, nlohmann::json(nullptr));
  }
  data["solo"] = search["solo"];
  // The swept option: the first whose value differs between rows.
  std::string swept;
  const auto& rows = search["colocated"];
  if (rows.size() > 1 && rows.front().contains("policy_options")) {
    for (const auto& [key, value] : rows.front()["policy_options"].items()) {
      for (const auto& row : rows) {
        if (row.contains("policy_options") && row["policy_options"].value(key, value) != value) {
          swept = key;
          break;
        }
      }
      if (!swept.empty()) break;
    }
  }
  auto out = nlohmann::json::array();
  for (const auto& row : rows) {
    out.push_back({{"label", maxbatch_label(row, swept)},
                   {"policy", row["policy"]},
                   {"max_batch", row["max_batch"]},
                   {"no_failure_found", row.value("no_failure_found", false)},
                   {"samples_per_s", row["samples_per_s"]},
                   {"ratio_percent", row.value("ratio_percent", nlohmann::json(nullptr))}});
  }
  data["rows"] = std::move(out);
  return data;
}

}  // namespace

nlohmann::json report_data(const results_document& results, const memory_timeline* timeline) {
  // parse_results checks the fields the page computes with; any other field of the wrong type (a
  // hand-edited file: a name that is null, a flag that is a string) is refused here, naming
  // the file, rather than escaping as the JSON library's own exception.
  try {
    switch (results.kind) {
      case document_kind::run:
        return run_data(results.json, results.source, timeline);
      case document_kind::comparison:
        return comparison_data(results.json, results.source);
      case document_kind::maxbatch:
        return maxbatch_data(results.json, results.source);
    }
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (const auto end = what.find("] "); end != std::string::npos) what = what.substr(end + 2);
    TANDEM_FAIL(config_error, "cannot make a report of '" + results.source +
                                  "': a field is not what tandem writes (" + what +
                                  "); give the results file as tandem wrote it");
  }
  return nullptr;
}

}  // namespace tandem::report
