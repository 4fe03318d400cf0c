#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tandem/common/error.hpp"
#include "tandem/common/json_field.hpp"
#include "tandem/runtime/input_file.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/workload_limits.hpp"

namespace tandem::runtime {

bool operator==(const iteration_detail& a, const iteration_detail& b) {
  return a.allocations == b.allocations && a.held.held_at_start == b.held.held_at_start &&
         a.held.steps == b.held.steps && a.held.duration_s == b.held.duration_s &&
         a.operations == b.operations;
}

namespace {

// ---- writing ----

nlohmann::json to_json(const iteration_detail& detail) {
  nlohmann::json allocations = nlohmann::json::array();
  for (const auto& step : detail.allocations) {
    allocations.push_back({step.at_s, step.delta_bytes, memory::to_string(step.kind)});
  }
  nlohmann::json held_steps = nlohmann::json::array();
  for (const auto& step : detail.held.steps) held_steps.push_back({step.at_s, step.delta});
  nlohmann::json operations = nlohmann::json::array();
  for (const auto& op : detail.operations)
    operations.push_back({op.name, op.start_s, op.duration_s});
  return {{"allocations", allocations},
          {"held",
           {{"held_at_start", detail.held.held_at_start},
            {"duration_s", detail.held.duration_s},
            {"steps", held_steps}}},
          {"operations", operations}};
}

/// The sequence as write_access_sequence_json writes it, embedded as an object.
nlohmann::json to_json(const std::optional<footprint::access_sequence>& sequence) {
  if (!sequence) return nullptr;
  std::stringstream text;
  footprint::write_access_sequence_json(*sequence, text);
  return nlohmann::json::parse(text);
}

// ---- reading ----

/// What to do about a malformed profile: every field's complaint ends with it.
const char* const not_a_profile =
    "this is not a profile as `tandem profile` writes it (see docs/profile-format.md): re-run "
    "`tandem profile WORKLOAD --out FILE`";

allocation_step read_allocation(const json_field& f) {
  const auto parts = f.elements("[time_s, delta_bytes, kind]", 3);
  const auto kind = memory::parse_alloc_kind(parts[2].text());
  if (!kind)
    parts[2].expected("an allocation kind (unknown, persistent, feature_map, gradient, temporary)");
  return {parts[0].seconds(), parts[1].signed_bytes(), *kind};
}

schedule::usage_step read_held_step(const json_field& f) {
  const auto parts = f.elements("[time_s, delta_bytes]", 2);
  return {parts[0].seconds(), parts[1].signed_bytes()};
}

operation_record read_operation(const json_field& f) {
  const auto parts = f.elements("[name, start_s, duration_s]", 3);
  return {parts[0].text(), parts[1].seconds(), parts[2].seconds()};
}

iteration_detail read_detail(const json_field& f) {
  iteration_detail detail;
  for (const auto& step : f["allocations"].elements())
    detail.allocations.push_back(read_allocation(step));
  const auto held = f["held"];
  detail.held.held_at_start = held["held_at_start"].count<std::size_t>();
  detail.held.duration_s = held["duration_s"].seconds();
  for (const auto& step : held["steps"].elements())
    detail.held.steps.push_back(read_held_step(step));
  for (const auto& op : f["operations"].elements()) detail.operations.push_back(read_operation(op));
  return detail;
}

std::string read_status(const json_field& f) {
  auto status = f.text();
  if (status != "completed" && status != "failed" && status != "stopped") {
    f.expected("\"completed\", \"failed\" or \"stopped\"");
  }
  return status;
}

/// An embedded access sequence, read by read_access_sequence_json (which validates it); its
/// messages name the profile and the field.
std::optional<footprint::access_sequence> read_sequence(const json_field& f,
                                                        const std::string& source) {
  if (f.json().is_null()) return std::nullopt;
  std::istringstream text(f.json().dump());
  return footprint::read_access_sequence_json(text, source + ": " + f.path());
}

job_profile read_job(const json_field& f, int version, const std::string& source) {
  job_profile job;
  job.name = f["name"].text();
  job.model = f["model"].text();
  job.batch_size = f["batch_size"].positive();
  job.threads = f["threads"].positive();
  const auto status = read_status(f["status"]);
  job.completed = status == "completed";
  job.stopped = status == "stopped";
  job.error = f["error"].text();
  job.setup_s = f["setup_s"].seconds();
  for (const auto& t : f["iteration_s"].elements()) job.iteration_s.push_back(t.seconds());
  job.persistent_bytes = f["persistent_bytes"].count<std::size_t>();
  job.peak_live_bytes = f["peak_live_bytes"].count<std::size_t>();
  job.peak_reserved_bytes = f["peak_reserved_bytes"].count<std::size_t>();
  const auto last = f["last_iteration"];
  if (!last.json().is_null()) job.last_iteration = read_detail(last);
  if (version >= 3) job.sequence = read_sequence(f["sequence"], source);
  return job;
}

/// Another version's fields may mean something else: refuse it rather than guess. Returns the
/// version (2 lacks the access sequences).
int check_version(const json_field& root, const std::string& source) {
  const auto version = root["schema_version"].count<int>("a whole number");
  if (version < oldest_profile_schema_version || version > profile_schema_version) {
    throw config_error(source + ": a profile of schema version " + std::to_string(version) +
                       ", but this build of tandem reads versions " +
                       std::to_string(oldest_profile_schema_version) + " to " +
                       std::to_string(profile_schema_version) +
                       " only; re-run `tandem profile WORKLOAD --out FILE` with this build");
  }
  return version;
}

}  // namespace

void write_profile_json(const profile_set& profiles, std::ostream& out) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& job : profiles.jobs) {
    jobs.push_back({{"name", job.name},
                    {"model", job.model},
                    {"batch_size", job.batch_size},
                    {"threads", job.threads},
                    {"status", job.completed ? "completed"
                               : job.stopped ? "stopped"
                                             : "failed"},
                    {"error", job.error},
                    {"setup_s", job.setup_s},
                    {"iteration_s", job.iteration_s},
                    {"persistent_bytes", job.persistent_bytes},
                    {"peak_live_bytes", job.peak_live_bytes},
                    {"peak_reserved_bytes", job.peak_reserved_bytes},
                    {"last_iteration",
                     job.last_iteration ? to_json(*job.last_iteration) : nlohmann::json(nullptr)},
                    {"sequence", to_json(job.sequence)}});
  }
  const nlohmann::json document{{"schema_version", profile_schema_version},
                                {"workload", profiles.workload},
                                {"device", profiles.device},
                                {"region_size", profiles.region_size},
                                {"cores", profiles.cores},
                                {"jobs", jobs}};
  out << document.dump(1) << '\n';
}

profile_set read_profile_json(std::istream& in, const std::string& source) {
  const auto document =
      parse_document(in, {source, "write profiles with `tandem profile WORKLOAD --out FILE`"});
  const document_context context{source, not_a_profile};
  const json_field root(document, "", context);
  if (!document.is_object()) root.expected("an object");
  const auto version = check_version(root, source);
  profile_set profiles;
  profiles.workload = root["workload"].text();
  profiles.device = root["device"].text();
  profiles.region_size = root["region_size"].count<std::size_t>();
  profiles.cores = root["cores"].count<unsigned>();
  for (const auto& job : root["jobs"].elements())
    profiles.jobs.push_back(read_job(job, version, source));
  return profiles;
}

profile_set load_profile(const std::filesystem::path& path) {
  const input_file_kind kind{
      "profile file", max_profile_file_bytes,
      "check the path (write one with `tandem profile WORKLOAD --out FILE`)"};
  std::istringstream text(read_input_file(path, kind));
  return read_profile_json(text, path.string());
}

}  // namespace tandem::runtime
