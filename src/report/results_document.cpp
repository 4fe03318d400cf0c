#include "tandem/report/results_document.hpp"

#include <initializer_list>

#include "tandem/common/error.hpp"
#include "tandem/runtime/input_file.hpp"

namespace tandem::report {
namespace {

constexpr runtime::input_file_kind results_file{
    "results file", std::size_t{1} << 30,
    "give the JSON that `tandem run --json`, `tandem sim --json` or `tandem maxbatch --json` "
    "wrote"};

[[noreturn]] void refuse(const std::string& source, const std::string& why) {
  TANDEM_FAIL(config_error, "cannot make a report of '" + source + "': " + why);
}

/// The fields every `where` object must hold for the page.
void require(const nlohmann::json& object, const std::string& where,
             std::initializer_list<const char*> fields, const std::string& source) {
  for (const char* field : fields) {
    if (!object.contains(field)) {
      refuse(source, where + " has no field '" + field + "' (" +
                         "not a file tandem wrote, or from an older tandem)");
    }
  }
}

/// Of `fields`, those `where` holds must be numbers, or null (a figure not measured: tandem
/// writes a rate it could not measure, or a number that is not finite, as null). The page does
/// arithmetic on them.
void require_numbers(const nlohmann::json& object, const std::string& where,
                     std::initializer_list<const char*> fields, const std::string& source) {
  for (const char* field : fields) {
    const auto found = object.find(field);
    if (found == object.end() || found->is_number() || found->is_null()) continue;
    refuse(source, where + ": '" + field + "' is " + std::string(found->type_name()) +
                       ", not a number (" + found->dump().substr(0, 40) + ")");
  }
}

void check_run(const nlohmann::json& run, const std::string& where, const std::string& source) {
  if (!run.is_object()) refuse(source, where + " is not an object");
  require(run, where,
          {"schema_version", "policy", "budget_bytes", "makespan_s", "aggregate_samples_per_s",
           "peak_reserved_bytes", "jobs"},
          source);
  require_numbers(run, where,
                  {"budget_bytes", "makespan_s", "aggregate_samples_per_s", "peak_reserved_bytes"},
                  source);
  if (!run["jobs"].is_array()) refuse(source, where + ": 'jobs' is not an array");
  std::size_t index = 0;
  for (const auto& job : run["jobs"]) {
    const auto at = where + ", job " + std::to_string(index++);
    if (!job.is_object()) refuse(source, at + " is not an object");
    require(job, at,
            {"name", "status", "arrival_s", "first_start_s", "end_s", "setup_s", "samples_per_s",
             "iteration_log"},
            source);
    require_numbers(job, at, {"arrival_s", "first_start_s", "end_s", "setup_s", "samples_per_s"},
                    source);
    if (!job["iteration_log"].is_array()) refuse(source, at + ": 'iteration_log' is not an array");
    for (const auto& iteration : job["iteration_log"]) {
      if (!iteration.is_object() || !iteration.contains("start_s") ||
          !iteration.contains("end_s") || !iteration["start_s"].is_number() ||
          !iteration["end_s"].is_number()) {
        refuse(source, at + ": an entry of 'iteration_log' has no numbers 'start_s' and 'end_s'");
      }
    }
  }
}

}  // namespace

const char* to_string(document_kind kind) {
  switch (kind) {
    case document_kind::run:
      return "run";
    case document_kind::comparison:
      return "comparison";
    case document_kind::maxbatch:
      return "maxbatch";
  }
  return "?";
}

results_document parse_results(std::string_view text, const std::string& source) {
  results_document document;
  document.source = source;
  try {
    document.json = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message says where ("at line 3, column 7") and what it expected.
    std::string what = e.what();
    if (const auto colon = what.find("parse error"); colon != std::string::npos)
      what = what.substr(colon);
    refuse(source, "it is not JSON: " + what);
  }
  const auto& json = document.json;
  if (json.is_array()) {
    if (json.empty()) refuse(source, "it is an empty array (a comparison of no runs)");
    document.kind = document_kind::comparison;
    for (std::size_t i = 0; i < json.size(); ++i)
      check_run(json[i], "run " + std::to_string(i), source);
  } else if (json.is_object() && json.contains("solo") && json.contains("colocated")) {
    document.kind = document_kind::maxbatch;
    require(json, "the search", {"workload", "model", "jobs", "device", "budget_bytes"}, source);
    require_numbers(json, "the search", {"jobs", "iterations", "budget_bytes"}, source);
    if (!json["solo"].is_object()) refuse(source, "'solo' is not an object");
    require(json["solo"], "'solo'", {"max_batch", "samples_per_s"}, source);
    require_numbers(json["solo"], "'solo'", {"max_batch", "samples_per_s"}, source);
    if (!json["colocated"].is_array()) refuse(source, "'colocated' is not an array");
    for (const auto& row : json["colocated"]) {
      if (!row.is_object()) refuse(source, "a 'colocated' row is not an object");
      require(row, "a 'colocated' row", {"policy", "max_batch", "samples_per_s"}, source);
      require_numbers(row, "a 'colocated' row", {"max_batch", "samples_per_s"}, source);
    }
  } else if (json.is_object() && json.contains("jobs")) {
    document.kind = document_kind::run;
    check_run(json, "the results", source);
  } else {
    refuse(source,
           "it is JSON but not results: expected an object with 'jobs' (tandem run or sim "
           "--json), an array of them (tandem sim --compare --json) or an object with 'solo' "
           "and 'colocated' (tandem maxbatch --json)");
  }
  return document;
}

results_document load_results(const std::filesystem::path& path) {
  return parse_results(runtime::read_input_file(path, results_file), path.string());
}

}  // namespace tandem::report
