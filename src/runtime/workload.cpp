#include "tandem/runtime/workload.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/runtime/input_file.hpp"
#include "tandem/runtime/workload_limits.hpp"

namespace tandem::runtime {

namespace {

/// Reads values out of the parsed document; every failure names the file and line.
class reader {
 public:
  explicit reader(std::string source) : source_(std::move(source)) {}

  [[nodiscard]] const std::string& source() const { return source_; }

  [[noreturn]] void fail(std::size_t line, const std::string& message) const {
    throw config_error(source_ + ":" + std::to_string(line) + ": " + message);
  }

  static std::size_t line_of(const toml::node& node) { return node.source().begin.line; }

  void check_keys(const toml::table& table, const std::vector<std::string>& allowed,
                  const std::string& where) const {
    for (const auto& [key, node] : table) {
      const std::string name(key.str());
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        fail(line_of(node), "unknown key '" + name + "' in " + where + suggest_name(name, allowed) +
                                " (allowed: " + join_names(allowed) + ")");
      }
    }
  }

  const toml::node* find(const toml::table& table, std::string_view key) const {
    return table.get(key);
  }

  std::optional<std::string> string(const toml::table& table, std::string_view key,
                                    const std::string& where) const {
    const auto* node = find(table, key);
    if (node == nullptr) return std::nullopt;
    if (!node->is_string())
      fail(line_of(*node), std::string(key) + " in " + where + " must be a string");
    return std::string(node->as_string()->get());
  }

  std::optional<std::int64_t> integer(const toml::table& table, std::string_view key,
                                      const std::string& where) const {
    const auto* node = find(table, key);
    if (node == nullptr) return std::nullopt;
    if (!node->is_integer()) {
      fail(line_of(*node), std::string(key) + " in " + where + " must be a whole number");
    }
    return node->as_integer()->get();
  }

  std::optional<double> number(const toml::table& table, std::string_view key,
                               const std::string& where) const {
    const auto* node = find(table, key);
    if (node == nullptr) return std::nullopt;
    if (node->is_integer()) return static_cast<double>(node->as_integer()->get());
    if (!node->is_floating_point())
      fail(line_of(*node), std::string(key) + " in " + where + " must be a number");
    return node->as_floating_point()->get();
  }

  /// A byte size: a whole number of bytes or a string such as "2GiB".
  std::optional<std::size_t> bytes(const toml::table& table, std::string_view key,
                                   const std::string& where) const {
    const auto* node = find(table, key);
    if (node == nullptr) return std::nullopt;
    if (node->is_integer() && node->as_integer()->get() >= 0) {
      return static_cast<std::size_t>(node->as_integer()->get());
    }
    if (node->is_string()) {
      try {
        return parse_bytes(node->as_string()->get());
      } catch (const config_error& e) {
        fail(line_of(*node), std::string(key) + " in " + where + ": " + e.what());
      }
    }
    fail(line_of(*node), std::string(key) + " in " + where +
                             " must be a size: a byte count or a string such as \"2GiB\"");
  }

  /// A duration: seconds as a number, or a string such as "90s", "500ms", "2min".
  std::optional<double> seconds(const toml::table& table, std::string_view key,
                                const std::string& where) const {
    const auto* node = find(table, key);
    if (node == nullptr) return std::nullopt;
    if (!node->is_string()) return number(table, key, where);
    const std::string text(node->as_string()->get());
    double value = 0;
    std::string unit;
    std::istringstream in(text);
    const bool readable = (in >> value) && (in >> unit) && in.rdbuf()->in_avail() == 0;
    const std::map<std::string, double> scale{{"ms", 1e-3}, {"s", 1}, {"min", 60}, {"h", 3600}};
    const auto found = readable ? scale.find(unit) : scale.end();
    if (found == scale.end()) {
      fail(line_of(*node), std::string(key) + " in " + where + ": cannot read the duration '" +
                               text +
                               "'; write seconds as a number or a string like \"90s\", "
                               "\"500ms\", \"2min\"");
    }
    return value * found->second;
  }

  option_table options(const toml::table& table, const std::vector<std::string>& skip) const {
    option_table out;
    for (const auto& [key, node] : table) {
      const std::string name(key.str());
      if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
      option_value value;
      value.line = line_of(node);
      if (node.is_integer()) {
        value.value = node.as_integer()->get();
      } else if (node.is_floating_point()) {
        value.value = node.as_floating_point()->get();
      } else if (node.is_boolean()) {
        value.value = node.as_boolean()->get();
      } else if (node.is_string()) {
        value.value = std::string(node.as_string()->get());
      } else {
        fail(value.line, "option '" + name + "' must be a number, a boolean or a string");
      }
      out.emplace(name, std::move(value));
    }
    return out;
  }

  void check_name(const std::string& name, const std::vector<std::string>& known,
                  const std::string& what, std::size_t line) const {
    if (known.empty() || std::find(known.begin(), known.end(), name) != known.end()) return;
    fail(line, "unknown " + what + " '" + name + "'" + suggest_name(name, known) +
                   " (known: " + join_names(known) + ")");
  }

 private:
  std::string source_;
};

/// "1e+10": a number as a message shows it.
std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

/// A time in seconds from the start: 0 up to the horizon; `what` names it in the message.
double within_horizon(const reader& in, std::size_t line, const std::string& what, double value) {
  if (!(value >= 0 && value <= max_horizon_s)) {
    in.fail(line, what + " " + number_text(value) +
                      " s is not within the horizon tandem runs "
                      "and simulates: from 0 to " +
                      number_text(max_horizon_s) + " s (7 days) after the workload starts");
  }
  return value;
}

/// budget_schedule = [{ at = "10s", budget = "50%" }, ...]: budgets as sizes or percentages of
/// the capacity, times strictly increasing.
std::vector<budget_change> read_budget_schedule(const reader& in, const toml::node& node,
                                                std::size_t capacity) {
  const std::string where = "[device] budget_schedule";
  const auto* list = node.as_array();
  if (list == nullptr) {
    in.fail(reader::line_of(node), where +
                                       " must be a list of { at = TIME, budget = SIZE } "
                                       "tables, such as [{ at = \"10s\", budget = \"50%\" }]");
  }
  std::vector<budget_change> changes;
  for (const auto& item : *list) {
    const auto line = reader::line_of(item);
    const auto* entry = item.as_table();
    if (entry == nullptr)
      in.fail(line, where + ": each entry must be { at = TIME, budget = SIZE }");
    in.check_keys(*entry, {"at", "budget"}, where);
    budget_change change;
    change.line = line;
    const auto at = in.seconds(*entry, "at", where);
    if (!at) in.fail(line, where + ": each entry needs at = a time >= 0, such as \"10s\"");
    change.at_s = within_horizon(in, line, where + ": at", *at);
    const auto* budget = entry->get("budget");
    if (budget == nullptr) in.fail(line, where + ": each entry needs a budget, such as \"50%\"");
    const auto text = budget->is_string() ? std::string(budget->as_string()->get()) : "";
    if (!text.empty() && text.back() == '%') {
      double percent = 0;
      std::istringstream number(text.substr(0, text.size() - 1));
      if (!(number >> percent) || !number.eof() || percent <= 0 || percent > 100) {
        in.fail(line, where + ": cannot read the percentage '" + text +
                          "'; write a number above 0 and at most 100, such as \"50%\"");
      }
      change.bytes = static_cast<std::size_t>(percent / 100 * static_cast<double>(capacity));
    } else {
      change.bytes = in.bytes(*entry, "budget", where).value_or(0);
    }
    if (change.bytes == 0 || change.bytes > capacity) {
      in.fail(line, where + ": budget " + format_bytes(change.bytes) +
                        " must be above 0 and at most the capacity (" + format_bytes(capacity) +
                        ")");
    }
    if (!changes.empty() && change.at_s <= changes.back().at_s) {
      in.fail(line, where + ": times must increase; this entry is not later than the one before");
    }
    changes.push_back(change);
  }
  return changes;
}

/// `copy_bandwidth`: "auto", "memcpy", a rate such as "12GB/s" or "800MiB/s", or bytes per
/// second as a number (0: memcpy).
copy_rate read_copy_rate(const reader& in, const toml::node& node) {
  const auto fail = [&] {
    in.fail(reader::line_of(node),
            "copy_bandwidth must be \"auto\" (this machine's compute-to-copy ratio made a "
            "V100's over PCIe), \"memcpy\", a rate such as \"12GB/s\" or \"800MiB/s\", or "
            "bytes per second as a number");
  };
  copy_rate rate;
  double bytes_per_s = 0;
  if (node.is_integer() || node.is_floating_point()) {
    bytes_per_s = node.is_integer() ? static_cast<double>(node.as_integer()->get())
                                    : node.as_floating_point()->get();
    if (!(bytes_per_s >= 0) || !std::isfinite(bytes_per_s)) fail();
  } else if (node.is_string()) {
    const std::string text(node.as_string()->get());
    if (text == "auto") return rate;
    if (text == "memcpy") return {copy_rate::mode::memcpy, 0};
    double value = 0;
    std::string unit;
    std::istringstream parse(text);
    if (!(parse >> value)) fail();
    std::getline(parse, unit);
    std::erase(unit, ' ');
    const std::map<std::string, double> scale{
        {"B/s", 1},      {"KB/s", 1e3},      {"MB/s", 1e6},     {"GB/s", 1e9},
        {"KiB/s", 1024}, {"MiB/s", 1 << 20}, {"GiB/s", 1 << 30}};
    const auto found = scale.find(unit);
    if (found == scale.end() || !(value > 0) || !std::isfinite(value)) fail();
    bytes_per_s = value * found->second;
  } else {
    fail();
  }
  if (bytes_per_s == 0) return {copy_rate::mode::memcpy, 0};
  return {copy_rate::mode::fixed, bytes_per_s};
}

device_spec read_device(const reader& in, const toml::table& root) {
  const auto* node = root.get("device");
  if (node == nullptr) in.fail(1, "missing [device] table; add one with capacity and budget");
  const auto* table = node->as_table();
  if (table == nullptr) in.fail(reader::line_of(*node), "device must be a table: [device]");
  in.check_keys(*table,
                {"kind", "index", "inflight_limit", "capacity", "budget", "region_size",
                 "copy_bandwidth", "budget_schedule"},
                "[device]");
  device_spec device;
  const auto line = reader::line_of(*node);
  device.line = line;
  const auto kind = in.string(*table, "kind", "[device]").value_or("cpu");
  if (kind == "cuda") {
    device.kind = device::backend_kind::cuda;
  } else if (kind != "cpu") {
    in.fail(line, "unknown device kind '" + kind + "'; use \"cpu\" or \"cuda\"");
  }
  const auto capacity = in.bytes(*table, "capacity", "[device]");
  if (!capacity || *capacity == 0) {
    in.fail(line, "[device] needs a capacity greater than 0, such as capacity = \"2GiB\"");
  }
  device.capacity = *capacity;
  device.budget = in.bytes(*table, "budget", "[device]").value_or(0);
  if (const auto* budget = table->get("budget"); budget != nullptr && device.budget == 0) {
    in.fail(reader::line_of(*budget),
            "budget must be above 0; to let the jobs hold the whole capacity (" +
                format_bytes(device.capacity) + "), leave budget out");
  }
  if (device.budget > device.capacity) {
    in.fail(reader::line_of(*table->get("budget")),
            "budget (" + format_bytes(device.budget) + ") exceeds capacity (" +
                format_bytes(device.capacity) + "); lower the budget or raise the capacity");
  }
  if (const auto* schedule = table->get("budget_schedule")) {
    device.budget_schedule = read_budget_schedule(in, *schedule, device.capacity);
  }
  device.region_size = in.bytes(*table, "region_size", "[device]").value_or(0);
  if (const auto* region = table->get("region_size");
      region != nullptr && device.region_size == 0) {
    in.fail(reader::line_of(*region),
            "region_size must be above 0; leave it out for the pool's default (64 MiB, Zico's)");
  }
  const bool cuda = device.kind == device::backend_kind::cuda;
  if (const auto* rate = table->get("copy_bandwidth")) {
    if (cuda) {
      in.fail(reader::line_of(*rate),
              "copy_bandwidth sets the CPU backend's simulated copy engine; a CUDA device copies "
              "over its own bus: remove copy_bandwidth");
    }
    device.copy_bandwidth = read_copy_rate(in, *rate);
  }
  if (const auto index = in.integer(*table, "index", "[device]")) {
    const auto at = reader::line_of(*table->get("index"));
    if (!cuda)
      in.fail(at, "index picks a CUDA device (cuda:N); the CPU backend has one: remove it");
    if (*index < 0 || *index > 255) {
      in.fail(at,
              "index must be a CUDA device ordinal from 0 (as numbered after "
              "CUDA_VISIBLE_DEVICES), not " +
                  std::to_string(*index));
    }
    device.index = static_cast<int>(*index);
  }
  if (const auto limit = in.integer(*table, "inflight_limit", "[device]")) {
    const auto at = reader::line_of(*table->get("inflight_limit"));
    if (!cuda) {
      in.fail(at,
              "inflight_limit bounds how far a job's host runs ahead of a CUDA device (Zico "
              "§6.1); on the CPU backend operations run as they are issued: remove it");
    }
    if (*limit < 0 || *limit > 1'000'000) {
      in.fail(at,
              "inflight_limit must be 0 (no limit) or a number of allocating operations up "
              "to 1000000, not " +
                  std::to_string(*limit));
    }
    device.inflight_limit = static_cast<std::size_t>(*limit);
  }
  return device;
}

policy_spec read_policy(const reader& in, const toml::table& root,
                        const workload_vocabulary& vocabulary) {
  policy_spec policy;
  const auto* node = root.get("policy");
  if (node == nullptr)
    in.fail(1, "missing [policy] table; add one, e.g. [policy] name = \"temporal\"");
  const auto* table = node->as_table();
  if (table == nullptr) in.fail(reader::line_of(*node), "policy must be a table: [policy]");
  policy.line = reader::line_of(*node);
  const auto name = in.string(*table, "name", "[policy]");
  if (!name) in.fail(policy.line, "[policy] needs a name, e.g. name = \"temporal\"");
  in.check_name(*name, vocabulary.policies, "policy", reader::line_of(*table->get("name")));
  policy.name = *name;
  if (const auto planner = in.string(*table, "planner", "[policy]")) {
    policy.planner_line = reader::line_of(*table->get("planner"));
    // A planner spec (NAME:KEY=VALUE,...): the name here, the options when it plans.
    in.check_name(std::string(footprint::planner_name_of(*planner)), vocabulary.planners, "planner",
                  policy.planner_line);
    policy.planner = *planner;
  }
  policy.options = in.options(*table, {"name", "planner"});
  return policy;
}

/// kind = "training" (the default) or "inference".
job_kind read_kind(const reader& in, const toml::table& table, const std::string& at) {
  const auto kind = in.string(table, "kind", at);
  if (!kind || *kind == "training") return job_kind::training;
  if (*kind == "inference") return job_kind::inference;
  const std::vector<std::string> allowed{"training", "inference"};
  in.fail(reader::line_of(*table.get("kind")), "unknown job kind '" + *kind + "' in " + at +
                                                   suggest_name(*kind, allowed) +
                                                   " (allowed: " + join_names(allowed) + ")");
}

/// The keys one kind of job takes and the other does not, each with why and what to do.
void reject_keys_of_the_other_kind(const reader& in, const toml::table& table, job_kind kind,
                                   const std::string& at) {
  if (kind == job_kind::inference) {
    if (const auto* node = table.get("iterations")) {
      in.fail(reader::line_of(*node),
              at + " is an inference job: it does not train, so it has no iterations; write "
                   "requests = COUNT (requests to serve) or duration = TIME instead");
    }
    for (const char* key : {"optimizer", "learning_rate", "planner", "plan_budget"}) {
      if (const auto* node = table.get(key)) {
        in.fail(reader::line_of(*node), at +
                                            " is an inference job: it does not train, so it "
                                            "takes no " +
                                            key +
                                            "; remove it (an inference job serves requests = "
                                            "COUNT or for a duration, at rate = PER_SECOND)");
      }
    }
    return;
  }
  for (const char* key : {"rate", "requests", "request_seed"}) {
    if (const auto* node = table.get(key)) {
      in.fail(reader::line_of(*node), std::string("only inference jobs take ") + key + "; " + at +
                                          " trains: add kind = \"inference\" to serve requests, "
                                          "or remove " +
                                          key);
    }
  }
}

/// How long a job runs: exactly one of a count under `count_key` (a training job's iterations,
/// an inference job's requests) and a duration.
void read_length(const reader& in, const toml::table& table, const std::string& count_key,
                 const std::string& at, job_spec& job) {
  job.iterations = in.integer(table, count_key, at);
  job.duration_s = in.seconds(table, "duration", at);
  if (job.iterations.has_value() == job.duration_s.has_value()) {
    in.fail(job.line,
            at + " needs exactly one of " + count_key + " (a count) and duration (e.g. \"60s\")");
  }
  if (job.iterations && (*job.iterations <= 0 || *job.iterations > max_iterations)) {
    in.fail(reader::line_of(*table.get(count_key)),
            count_key + " must be from 1 to " + std::to_string(max_iterations) + ", not " +
                std::to_string(*job.iterations) +
                "; for a job that runs until a time, write duration = TIME instead");
  }
  if (job.duration_s) {
    const auto line = reader::line_of(*table.get("duration"));
    if (!(*job.duration_s > 0)) in.fail(line, "duration must be positive");
    static_cast<void>(within_horizon(in, line, "duration", *job.duration_s));
  }
}

/// An inference job's rate, requests or duration, and request_seed.
void read_inference(const reader& in, const toml::table& table, std::size_t index,
                    const std::string& at, job_spec& job) {
  const auto rate = in.number(table, "rate", at);
  if (!rate) {
    in.fail(job.line, at + " is an inference job: it needs rate = requests per second, e.g. "
                           "rate = 20");
  }
  if (!(*rate > 0) || !std::isfinite(*rate)) {
    in.fail(reader::line_of(*table.get("rate")),
            "rate must be a number of requests per second above 0, e.g. rate = 20");
  }
  job.request_rate = *rate;
  read_length(in, table, "requests", at, job);
  // By default the job's place in the file: identical models get different request streams.
  const auto seed = in.integer(table, "request_seed", at);
  if (seed && *seed < 0) {
    in.fail(reader::line_of(*table.get("request_seed")),
            "request_seed must be a whole number of 0 or more");
  }
  job.request_seed = seed ? static_cast<std::uint64_t>(*seed) : static_cast<std::uint64_t>(index);
}

/// A training job's `planner` and `plan_budget`.
void read_plan_keys(const reader& in, const toml::table& table, const std::string& at,
                    const workload_vocabulary& vocabulary, job_spec& job) {
  if (const auto planner = in.string(table, "planner", at)) {
    job.planner_line = reader::line_of(*table.get("planner"));
    // A planner spec (NAME:KEY=VALUE,...): the name here, the options when it plans.
    in.check_name(std::string(footprint::planner_name_of(*planner)), vocabulary.planners, "planner",
                  job.planner_line);
    job.planner = *planner;
  }
  const auto* budget = table.get("plan_budget");
  if (budget == nullptr) return;
  const auto line = reader::line_of(*budget);
  if (!budget->is_integer() && !budget->is_string()) {
    in.fail(line, "plan_budget in " + at +
                      " must be a share of the job's vanilla peak such as \"75%\", a size such "
                      "as \"1GiB\" or a number of bytes");
  }
  try {
    job.plan_budget = budget->is_integer() ? footprint_budget_of_bytes(budget->as_integer()->get())
                                           : parse_footprint_budget(budget->as_string()->get());
  } catch (const config_error& e) {
    in.fail(line, "plan_budget in " + at + ": " + e.what());
  }
  // A budget for a plan asks for one: by the default planner where none is named.
  if (!job.planner) {
    job.planner = std::string(footprint::default_planner);
    job.planner_line = line;
  }
}

job_spec read_job(const reader& in, const toml::table& table, std::size_t index,
                  const workload_vocabulary& vocabulary) {
  job_spec job;
  job.line = reader::line_of(table);
  const std::string where = "[[job]] #" + std::to_string(index + 1);
  in.check_keys(table,
                {"name", "kind", "model", "model_options", "batch_size", "optimizer",
                 "learning_rate", "iterations", "duration", "arrival", "priority", "threads",
                 "rate", "requests", "request_seed", "planner", "plan_budget"},
                where);
  job.name = in.string(table, "name", where).value_or("job" + std::to_string(index + 1));
  // A name is a table's row, a timeline's field and a chart's label: one line of text.
  if (job.name.empty() || std::any_of(job.name.begin(), job.name.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      })) {
    in.fail(reader::line_of(*table.get("name")),
            "name in " + where +
                " must be a line of text, not empty and without tabs or line breaks, e.g. "
                "name = \"trial-1\"");
  }
  const std::string at = where + " ('" + job.name + "')";
  job.kind = read_kind(in, table, at);
  reject_keys_of_the_other_kind(in, table, job.kind, at);
  const auto model = in.string(table, "model", at);
  if (!model) in.fail(job.line, at + " needs a model, e.g. model = \"resnet20\"");
  in.check_name(*model, vocabulary.models, "model", reader::line_of(*table.get("model")));
  job.model = *model;
  if (const auto* options = table.get("model_options")) {
    if (!options->is_table()) in.fail(reader::line_of(*options), "model_options must be a table");
    job.model_options = in.options(*options->as_table(), {});
  }
  const auto batch = in.integer(table, "batch_size", at);
  if (!batch || *batch <= 0) {
    in.fail(batch ? reader::line_of(*table.get("batch_size")) : job.line,
            at + " needs a batch_size of at least 1");
  }
  if (*batch > max_batch_size) {
    in.fail(reader::line_of(*table.get("batch_size")), "batch_size must be at most " +
                                                           std::to_string(max_batch_size) +
                                                           ", not " + std::to_string(*batch));
  }
  job.batch_size = *batch;
  if (job.kind == job_kind::inference) {
    read_inference(in, table, index, at, job);
  } else {
    job.optimizer = in.string(table, "optimizer", at).value_or("sgd");
    if (table.get("optimizer") != nullptr) {
      in.check_name(job.optimizer, vocabulary.optimizers, "optimizer",
                    reader::line_of(*table.get("optimizer")));
    }
    job.learning_rate = in.number(table, "learning_rate", at).value_or(0.01);
    if (!(job.learning_rate > 0) || !std::isfinite(job.learning_rate)) {
      in.fail(reader::line_of(*table.get("learning_rate")),
              "learning_rate must be a positive finite number, such as 0.01, not " +
                  number_text(job.learning_rate));
    }
    read_length(in, table, "iterations", at, job);
    read_plan_keys(in, table, at, vocabulary, job);
  }
  if (const auto arrival = in.seconds(table, "arrival", at)) {
    job.arrival_s = within_horizon(in, reader::line_of(*table.get("arrival")), "arrival", *arrival);
  }
  job.priority = in.integer(table, "priority", at).value_or(0);
  job.threads = in.integer(table, "threads", at).value_or(1);
  if (job.threads < 1 || job.threads > 1024) {
    in.fail(reader::line_of(*table.get("threads")), "threads must be between 1 and 1024");
  }
  return job;
}

/// The TOML document of `text`, whose top-level keys must be among `keys`.
toml::table parse_document(const reader& in, std::string_view text,
                           const std::vector<std::string>& keys, const std::string& where) {
  toml::table root;
  try {
    root = toml::parse(text, in.source());
  } catch (const toml::parse_error& e) {
    in.fail(e.source().begin.line, std::string("not valid TOML: ") + std::string(e.description()));
  }
  in.check_keys(root, keys, where);
  return root;
}

/// A workload of the document's [device] and [policy], without jobs yet.
workload read_device_and_policy(const reader& in, const toml::table& root,
                                const workload_vocabulary& vocabulary) {
  workload out;
  out.source = in.source();
  out.device = read_device(in, root);
  out.policy = read_policy(in, root, vocabulary);
  return out;
}

}  // namespace

workload parse_workload(std::string_view text, const std::string& source,
                        const workload_vocabulary& vocabulary) {
  const reader in(source);
  const auto root = parse_document(in, text, {"device", "policy", "job"}, "the workload");
  auto out = read_device_and_policy(in, root, vocabulary);
  const auto* jobs = root.get("job");
  if (jobs != nullptr && jobs->is_table()) {
    in.fail(reader::line_of(*jobs),
            "[job] is one table: write each job as [[job]] (two brackets), which TOML reads as a "
            "list of jobs");
  }
  if (jobs == nullptr || !jobs->is_array_of_tables() || jobs->as_array()->empty()) {
    in.fail(jobs != nullptr ? reader::line_of(*jobs) : 1,
            "no jobs: add at least one [[job]] table with a name, model and batch_size");
  }
  if (jobs->as_array()->size() > max_jobs) {
    in.fail(reader::line_of(*jobs), "the workload has " + std::to_string(jobs->as_array()->size()) +
                                        " jobs; tandem takes at most " + std::to_string(max_jobs) +
                                        " in one workload: split it into several");
  }
  std::set<std::string> names;
  std::size_t index = 0;
  for (const auto& node : *jobs->as_array()) {
    auto job = read_job(in, *node.as_table(), index++, vocabulary);
    if (!names.insert(job.name).second) {
      in.fail(job.line, "two jobs are named '" + job.name + "'; give each job its own name");
    }
    out.jobs.push_back(std::move(job));
  }
  return out;
}

workload parse_device_and_policy(std::string_view text, const std::string& source,
                                 const workload_vocabulary& vocabulary) {
  const reader in(source);
  const auto root = parse_document(in, text, {"device", "policy"}, "the runtime's options");
  return read_device_and_policy(in, root, vocabulary);
}

workload load_workload(const std::filesystem::path& path, const workload_vocabulary& vocabulary) {
  const input_file_kind kind{"workload file", max_workload_file_bytes,
                             "check the path (examples/ has some to start from)"};
  return parse_workload(read_input_file(path, kind), path.string(), vocabulary);
}

}  // namespace tandem::runtime
