#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tandem/common/error.hpp"
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

// ---- reading ----

/// A value of the document and where it is (`jobs[1].setup_s`), so that every complaint names
/// the field and says what it should hold.
class field {
 public:
  field(const nlohmann::json& value, std::string path, const std::string& source)
      : value_(value), path_(std::move(path)), source_(source) {}

  [[nodiscard]] const nlohmann::json& json() const { return value_; }

  [[noreturn]] void fail(const std::string& problem) const {
    throw config_error(source_ + ": " + (path_.empty() ? "the document" : path_) + ": " + problem +
                       "; this is not a profile as `tandem profile` writes it (see "
                       "docs/profile-format.md): re-run `tandem profile WORKLOAD --out FILE`");
  }
  [[noreturn]] void expected(const std::string& what) const {
    auto shown = value_.dump();
    if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
    fail("expected " + what + ", got " + shown);
  }

  /// The member `key` of this object; missing is an error.
  [[nodiscard]] field operator[](const char* key) const {
    if (!value_.is_object()) expected("an object");
    const auto found = value_.find(key);
    const auto path = path_.empty() ? std::string(key) : path_ + "." + key;
    if (found == value_.end()) field(value_, path, source_).fail("missing");
    return {*found, path, source_};
  }

  /// The elements of this array (of exactly `count` elements when given, with `shape` saying
  /// what they are).
  [[nodiscard]] std::vector<field> elements(const std::string& shape = "an array",
                                            std::size_t count = 0) const {
    if (!value_.is_array() || (count != 0 && value_.size() != count)) expected(shape);
    std::vector<field> out;
    out.reserve(value_.size());
    for (std::size_t i = 0; i < value_.size(); ++i)
      out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]", source_);
    return out;
  }

  [[nodiscard]] std::string text() const {
    if (!value_.is_string()) expected("a string");
    return value_.get<std::string>();
  }
  [[nodiscard]] double seconds() const {
    if (!value_.is_number() || !std::isfinite(value_.get<double>()) || value_.get<double>() < 0)
      expected("a number of seconds >= 0");
    return value_.get<double>();
  }
  /// A whole number >= 0 that fits `T`.
  template <typename T>
  [[nodiscard]] T count(const std::string& what = "a whole number >= 0") const {
    if (!value_.is_number_unsigned() ||
        value_.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<T>::max()})
      expected(what);
    return static_cast<T>(value_.get<std::uint64_t>());
  }
  [[nodiscard]] std::int64_t signed_bytes() const {
    if (!value_.is_number_integer() ||
        (value_.is_number_unsigned() &&
         value_.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<std::int64_t>::max()}))
      expected("a whole number of bytes");
    return value_.get<std::int64_t>();
  }
  [[nodiscard]] std::int64_t positive() const {
    const auto n = count<std::int64_t>("a whole number >= 1");
    if (n < 1) expected("a whole number >= 1");
    return n;
  }

 private:
  const nlohmann::json& value_;
  std::string path_;
  const std::string& source_;
};

allocation_step read_allocation(const field& f) {
  const auto parts = f.elements("[time_s, delta_bytes, kind]", 3);
  const auto kind = memory::parse_alloc_kind(parts[2].text());
  if (!kind)
    parts[2].expected("an allocation kind (unknown, persistent, feature_map, gradient, temporary)");
  return {parts[0].seconds(), parts[1].signed_bytes(), *kind};
}

schedule::usage_step read_held_step(const field& f) {
  const auto parts = f.elements("[time_s, delta_bytes]", 2);
  return {parts[0].seconds(), parts[1].signed_bytes()};
}

operation_record read_operation(const field& f) {
  const auto parts = f.elements("[name, start_s, duration_s]", 3);
  return {parts[0].text(), parts[1].seconds(), parts[2].seconds()};
}

iteration_detail read_detail(const field& f) {
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

std::string read_status(const field& f) {
  auto status = f.text();
  if (status != "completed" && status != "failed" && status != "stopped") {
    f.expected("\"completed\", \"failed\" or \"stopped\"");
  }
  return status;
}

job_profile read_job(const field& f) {
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
  return job;
}

/// Another version's fields may mean something else: refuse it rather than guess.
void check_version(const field& root, const std::string& source) {
  const auto version = root["schema_version"].count<int>("a whole number");
  if (version != profile_schema_version) {
    throw config_error(source + ": a profile of schema version " + std::to_string(version) +
                       ", but this build of tandem reads version " +
                       std::to_string(profile_schema_version) +
                       " only; re-run `tandem profile WORKLOAD --out FILE` with this build");
  }
}

nlohmann::json parse(std::istream& in, const std::string& source) {
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    // A syntax error or a number too large for a double. what() starts with
    // "[json.exception.parse_error.N] ": keep the position and reason.
    std::string reason = e.what();
    if (const auto at = reason.find("] "); at != std::string::npos) reason.erase(0, at + 2);
    throw config_error(source + ": not valid JSON (" + reason +
                       "); write profiles with `tandem profile WORKLOAD --out FILE`");
  }
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
                     job.last_iteration ? to_json(*job.last_iteration) : nlohmann::json(nullptr)}});
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
  const auto document = parse(in, source);
  const field root(document, "", source);
  if (!document.is_object()) root.expected("an object");
  check_version(root, source);
  profile_set profiles;
  profiles.workload = root["workload"].text();
  profiles.device = root["device"].text();
  profiles.region_size = root["region_size"].count<std::size_t>();
  profiles.cores = root["cores"].count<unsigned>();
  for (const auto& job : root["jobs"].elements()) profiles.jobs.push_back(read_job(job));
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
