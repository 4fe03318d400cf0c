#include "maxbatch_command.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <utility>
#include <variant>

#include "tandem/common/atomic_file.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/common/output_paths.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/runtime/footprint_budget.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_limits.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/schedule/registry.hpp"
#include "tandem/sim/workload_sim.hpp"
#if TANDEM_HAVE_TORCH
#include "tandem/runtime/session.hpp"
#endif

// No fmt here: in builds with libtorch this file sees its include directories (see
// run_command.cpp).

namespace tandem::cli {

search_result search_max_batch(const batch_probe& probe, const search_bounds& bounds,
                               std::ostream& progress) {
  search_result result;
  const auto try_batch = [&](std::int64_t batch) {
    auto run = probe(batch);
    ++result.probes;
    progress << "batch " << batch << ": " << run.detail << '\n' << std::flush;
    const auto outcome = run.outcome;
    if (outcome == probe_outcome::fits) {
      result.max_batch = batch;
      result.at_max = std::move(run);
    } else if (outcome == probe_outcome::failed ||
               (outcome == probe_outcome::refused && batch == bounds.low)) {
      result.error = "batch " + std::to_string(batch) + ": " + run.detail;
    } else if (outcome == probe_outcome::refused) {
      result.no_failure_found = true;
      progress << "the search stops at batch " << result.max_batch << ", the last that ran\n";
    }
    return outcome;
  };
  const auto ends_search = [](probe_outcome outcome) {
    return outcome == probe_outcome::failed || outcome == probe_outcome::refused;
  };

  if (try_batch(bounds.low) != probe_outcome::fits) return result;
  const auto upper = bounds.high.value_or(doubling_limit);
  std::int64_t first_failure = 0;
  while (first_failure == 0) {
    const auto last_fit = result.max_batch;
    if (last_fit >= upper) {
      result.no_failure_found = true;
      progress << "batch " << last_fit << " fits: the search stops at "
               << (bounds.high ? "--high" : "the doubling limit; pass --high to go further")
               << '\n';
      return result;
    }
    auto next = last_fit > upper - last_fit ? upper : 2 * last_fit;
    if (bounds.expected_failure && last_fit < *bounds.expected_failure)
      next = std::min(next, *bounds.expected_failure);
    const auto outcome = try_batch(next);
    if (ends_search(outcome)) return result;
    if (outcome == probe_outcome::out_of_memory) first_failure = next;
  }
  while (first_failure - result.max_batch > 1) {
    const auto middle = result.max_batch + (first_failure - result.max_batch) / 2;
    const auto outcome = try_batch(middle);
    if (ends_search(outcome)) return result;
    if (outcome == probe_outcome::out_of_memory) first_failure = middle;
  }
  return result;
}

namespace {

/// An out-of-memory report runs over several lines (the pool's regions); a progress line takes
/// its first, cut to this length.
constexpr std::size_t max_detail_chars = 200;

std::string first_line(const std::string& text) {
  auto line = text.substr(0, text.find('\n'));
  if (line.size() > max_detail_chars) line = line.substr(0, max_detail_chars) + "...";
  return line;
}

/// A run fits when every job completed; the first job to run out of memory says why not.
probe_result judge(const runtime::run_result& run, std::int64_t iterations) {
  const runtime::job_result* first_failure = nullptr;
  auto fewest_iterations = std::numeric_limits<std::int64_t>::max();
  for (const auto& job : run.jobs) {
    fewest_iterations = std::min(fewest_iterations, job.iterations);
    if (job.status != runtime::job_status::failed) continue;
    if (!job.out_of_memory) {
      return {probe_outcome::failed,
              "job " + job.name + " failed, not for lack of memory: " + first_line(job.error), 0};
    }
    if (first_failure == nullptr || job.end_s < first_failure->end_s) first_failure = &job;
  }
  if (first_failure != nullptr) {
    return {probe_outcome::out_of_memory,
            "job " + first_failure->name + " failed: " + first_line(first_failure->error),
            run.aggregate_samples_per_s};
  }
  // A real planned job whose last plan needed passive swapping beside it did not fit under its
  // plan: it only finished by swapping on demand, which no plan priced. An earlier plan that
  // needed it and was refitted for less, so that the last one held, does not count.
  for (const auto& job : run.jobs) {
    if (job.footprint && job.footprint->last_plan_fallback_bytes > 0) {
      return {probe_outcome::out_of_memory,
              "job " + job.name + "'s plan did not fit the budget: passive swapping moved " +
                  format_bytes(job.footprint->last_plan_fallback_bytes) + " beside it" +
                  (job.footprint->refits > 0
                       ? " after " + std::to_string(job.footprint->refits) + " refit(s)"
                       : std::string()),
              run.aggregate_samples_per_s};
    }
  }
  std::ostringstream detail;
  detail << "fits (" << fewest_iterations << " of " << iterations << " iterations each, "
         << std::fixed << std::setprecision(1) << run.aggregate_samples_per_s << " samples/s)";
  return {probe_outcome::fits, detail.str(), run.aggregate_samples_per_s};
}

/// A policy option as a workload file holds it (a whole number, else a real one), from no line.
runtime::option_value parse_number(const std::string& text, const std::string& given) {
  const char* end = text.data() + text.size();
  std::int64_t whole = 0;
  if (const auto [stop, status] = std::from_chars(text.data(), end, whole);
      status == std::errc{} && stop == end) {
    return {whole, 0};
  }
  double real = 0;
  if (const auto [stop, status] = std::from_chars(text.data(), end, real);
      status == std::errc{} && stop == end) {
    return {real, 0};
  }
  TANDEM_FAIL(config_error, given + ": '" + text +
                                "' is not a number; policy options are numbers, e.g. "
                                "--set ramp_start=0.7");
}

/// "KEY=VALUE" split at the first '='; `flag` and `example` make the message.
std::pair<std::string, std::string> split_setting(const std::string& text, const std::string& flag,
                                                  const std::string& example) {
  const auto equals = text.find('=');
  TANDEM_EXPECTS(equals != std::string::npos && equals > 0 && equals + 1 < text.size(),
                 config_error,
                 flag + " '" + text + "': write KEY=VALUE, e.g. " + flag + " " + example);
  return {text.substr(0, equals), text.substr(equals + 1)};
}

void check_option_name(const std::string& policy, const std::string& key,
                       const std::string& given) {
  const auto known = schedule::policy_option_names(policy);
  if (std::find(known.begin(), known.end(), key) != known.end()) return;
  TANDEM_FAIL(config_error, given + ": policy '" + policy + "' has no option '" + key + "'" +
                                (known.empty() ? "; it takes none"
                                               : suggest_name(key, known) +
                                                     " (its options: " + join_names(known) + ")"));
}

/// One co-located search: the policy's options, and the label of its row under --sweep.
struct colocated_case {
  std::string label;
  runtime::option_table policy_options;
};

/// The co-located searches: one, or one per --sweep value; the options are `base`, then
/// --set's, then the sweep's value.
std::vector<colocated_case> colocated_cases(const maxbatch_command_options& options,
                                            runtime::option_table base, const std::string& policy) {
  for (const auto& setting : options.settings) {
    const auto [key, value] = split_setting(setting, "--set", "ramp_start=0.7");
    check_option_name(policy, key, "--set " + setting);
    base[key] = parse_number(value, "--set " + setting);
  }
  if (options.sweep.empty()) return {{"", base}};

  const auto [key, values] = split_setting(options.sweep, "--sweep", "ramp_start=0.6,0.8,1");
  check_option_name(policy, key, "--sweep " + options.sweep);
  for (const auto& setting : options.settings) {
    TANDEM_EXPECTS(!setting.starts_with(key + "="), config_error,
                   "--set " + setting + " and --sweep " + options.sweep +
                       " both give the option '" + key + "'; drop one of them");
  }
  std::vector<colocated_case> cases;
  std::istringstream list(values);
  for (std::string value; std::getline(list, value, ',');) {
    auto each = base;
    each[key] = parse_number(value, "--sweep " + options.sweep);
    cases.push_back({key + "=" + value, std::move(each)});
  }
  TANDEM_EXPECTS(!cases.empty(), config_error,
                 "--sweep " + options.sweep + " lists no value; e.g. --sweep ramp_start=0.6,0.8,1");
  return cases;
}

/// The registry's policies judge their option values when made: made here, so that a value from
/// --set or --sweep is blamed on the flag rather than on the workload's [policy] line.
void check_option_values(const runtime::workload& spec) {
  const auto& registry = schedule::policy_names();
  if (std::find(registry.begin(), registry.end(), spec.policy.name) == registry.end()) return;
  try {
    static_cast<void>(schedule::make_policy(
        spec.policy.name, runtime::policy_context_of(spec, {}, runtime::budget_of(spec, {}))));
  } catch (const config_error& e) {
    throw config_error(std::string("--set/--sweep: ") + e.what());
  }
}

/// `count` copies of the workload's first job, named "<name>-1".."<name>-<count>", arriving at
/// once and each running `iterations`, under `policy` with `policy_options`.
runtime::workload identical_jobs(const runtime::workload& spec, std::int64_t count,
                                 std::int64_t iterations, const std::string& policy,
                                 runtime::option_table policy_options) {
  auto copy = spec;
  copy.policy.name = policy;
  copy.policy.options = std::move(policy_options);
  copy.jobs.clear();
  for (std::int64_t i = 1; i <= count; ++i) {
    auto job = spec.jobs.front();
    job.name += '-' + std::to_string(i);
    job.iterations = iterations;
    job.duration_s.reset();
    job.arrival_s = 0;
    copy.jobs.push_back(std::move(job));
  }
  return copy;
}

runtime::workload at_batch(runtime::workload spec, std::int64_t batch) {
  for (auto& job : spec.jobs) job.batch_size = batch;
  return spec;
}

/// Real or simulated runs: what the search's probes call, and the names they accept.
struct run_backend {
  runtime::workload_vocabulary vocabulary;
  std::vector<std::string> policies;
  std::function<void(const runtime::workload&)> validate;
  /// A real run stops early on `stop`; a simulated one (seconds at most) runs to its end.
  std::function<runtime::run_result(const runtime::workload&, std::stop_token stop)> run;
};

run_backend backend_for(const maxbatch_command_options& options) {
  if (options.simulate) {
    TANDEM_EXPECTS(options.gpu.has_value(), config_error,
                   "--sim needs --gpu NAME (p100, v100, 2080ti, a100-40gb, a100-80gb, h100): the "
                   "search generates each job's profile at every batch it tries, which recorded "
                   "profiles (--profiles, one batch each) cannot do");
    sim::sim_setup setup;
    setup.gpu = options.gpu;
    if (options.planner) {
      setup.planning = sim::job_planning{
          .planner = *options.planner,
          .budget = options.plan_budget
                        ? std::optional(sim::parse_plan_budget(*options.plan_budget))
                        : std::nullopt};
    }
    return {sim::simulation_vocabulary(setup), sim::simulated_policy_names(),
            [setup](const runtime::workload& spec) { sim::validate_simulation(spec, setup); },
            [setup](const runtime::workload& spec, const std::stop_token&) {
              return sim::simulate_workload(spec, setup);
            }};
  }
  TANDEM_EXPECTS(!options.gpu, config_error,
                 "--gpu " + options.gpu.value_or("") +
                     " is for simulated runs: add --sim, or drop --gpu to train for real");
  // Real planned probes: every job planned by the planner, for --plan-budget or by default 80% of
  // its share of the device budget: the pool holds whole regions, whose bytes run above the live
  // bytes a plan counts, so a plan made for the whole share rarely fits it (ResNet-20 on 40 MiB:
  // largest batch 64 planned for 40 MiB, 128 for 32 MiB). A job records its plan under the budget
  // in passive mode (planned_training.hpp).
  std::optional<runtime::footprint_budget> plan_budget;
  if (options.plan_budget) plan_budget = runtime::parse_footprint_budget(*options.plan_budget);
  const auto planned = [planner = options.planner, plan_budget](runtime::workload spec) {
    if (!planner) return spec;
    const auto share =
        runtime::budget_of(spec, {}) / std::max<std::size_t>(spec.jobs.size(), 1) / 5 * 4;
    for (auto& job : spec.jobs) {
      job.planner = *planner;
      job.plan_budget = plan_budget
                            ? *plan_budget
                            : runtime::footprint_budget_of_bytes(static_cast<std::int64_t>(share));
    }
    return spec;
  };
#if TANDEM_HAVE_TORCH
  return {runtime::training_vocabulary(), schedule::policy_names(),
          [planned](const runtime::workload& spec) {
            runtime::validate_training_workload(planned(spec), {});
          },
          [planned](const runtime::workload& spec, std::stop_token stop) {
            runtime::run_options settings;
            settings.stop = std::move(stop);
            return runtime::run_workload(planned(spec), settings);
          }};
#else
  TANDEM_FAIL(config_error,
              "this build has no libtorch, so maxbatch cannot train; simulate with --sim --gpu "
              "NAME, or run scripts/install-deps.sh and rebuild (cmake finds libtorch-dev)");
#endif
}

void check_bounds(const maxbatch_command_options& options) {
  if (options.planner) sim::check_planner(*options.planner);
  TANDEM_EXPECTS(options.jobs >= 1 && options.jobs <= max_colocated_jobs, config_error,
                 "--jobs " + std::to_string(options.jobs) + ": from 1 to " +
                     std::to_string(max_colocated_jobs) +
                     " copies run side by side (every run of the search runs them all, and "
                     "its time grows with the square of their number)");
  TANDEM_EXPECTS(options.iterations >= 1 && options.iterations <= max_probe_iterations,
                 config_error,
                 "--iterations " + std::to_string(options.iterations) + ": from 1 to " +
                     std::to_string(max_probe_iterations) +
                     " per job and run (a few show whether a batch fits; the default is 3)");
  TANDEM_EXPECTS(options.low >= 1, config_error,
                 "--low " + std::to_string(options.low) + ": the smallest batch is 1");
  TANDEM_EXPECTS(options.low <= runtime::max_batch_size, config_error,
                 "--low " + std::to_string(options.low) + ": the largest batch tandem runs is " +
                     std::to_string(runtime::max_batch_size));
  TANDEM_EXPECTS(!options.high || *options.high >= options.low, config_error,
                 "--high " + std::to_string(options.high.value_or(0)) + " is below --low " +
                     std::to_string(options.low) + "; raise --high or lower --low");
}

/// Thrown out of a probe when the search was asked to stop: a run cut short judges nothing.
struct search_stopped {};

/// What the runs shared, for the heading.
struct run_context {
  std::string device;
  std::size_t budget_bytes = 0;
};

struct table_row {
  std::string policy;
  std::string label;
  search_result colocated;
};

std::string max_text(const search_result& search) {
  return std::to_string(search.max_batch) + (search.no_failure_found ? "+" : "");
}

std::optional<double> ratio_percent(const search_result& colocated, const search_result& solo) {
  if (solo.max_batch == 0) return std::nullopt;
  return 100.0 * static_cast<double>(colocated.max_batch) / static_cast<double>(solo.max_batch);
}

std::string fixed_text(std::optional<double> value, const char* unit = "") {
  if (!value) return "-";
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << *value << unit;
  return text.str();
}

std::optional<double> rate_at_max(const search_result& search) {
  if (search.max_batch == 0) return std::nullopt;
  return search.at_max.aggregate_samples_per_s;
}

void print_table(const std::vector<table_row>& rows, const search_result& solo, std::int64_t jobs,
                 std::ostream& out) {
  std::size_t label_width = 0;
  for (const auto& row : rows) {
    if (!row.label.empty()) label_width = std::max(label_width, row.label.size() + 2);
  }
  // Each number is right-aligned after a space of its own, so that none runs into another.
  const auto print_row = [&](const std::string& policy, const std::string& label,
                             const std::array<std::string, 6>& numbers) {
    constexpr std::array<int, 6> widths{4, 9, 15, 8, 11, 15};
    out << std::left << std::setw(12) << policy << std::setw(static_cast<int>(label_width)) << label
        << std::right;
    for (std::size_t i = 0; i < numbers.size(); ++i)
      out << ' ' << std::setw(widths[i]) << numbers[i];
    out << '\n';
  };
  print_row("policy", label_width > 0 ? "option" : "",
            {"jobs", "solo max", "co-located max", "ratio", "samples/s", "solo samples/s"});
  for (const auto& row : rows) {
    print_row(row.policy, row.label,
              {std::to_string(jobs), max_text(solo), max_text(row.colocated),
               fixed_text(ratio_percent(row.colocated, solo), "%"),
               fixed_text(rate_at_max(row.colocated)), fixed_text(rate_at_max(solo))});
  }
  out << "ratio: co-located max / solo max; samples/s: all jobs together at that batch";
  const bool bounded = solo.no_failure_found ||
                       std::any_of(rows.begin(), rows.end(),
                                   [](const auto& row) { return row.colocated.no_failure_found; });
  if (bounded) out << "; +: no run failed up to the search's bound, the largest may be more";
  out << '\n';
}

nlohmann::json optional_json(std::optional<double> value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json search_json(const search_result& search) {
  return {{"max_batch", search.max_batch},
          {"no_failure_found", search.no_failure_found},
          {"samples_per_s", optional_json(rate_at_max(search))},
          {"probes", search.probes}};
}

nlohmann::json options_json(const runtime::option_table& options) {
  auto object = nlohmann::json::object();
  for (const auto& [key, value] : options) {
    object[key] = std::visit([](const auto& v) { return nlohmann::json(v); }, value.value);
  }
  return object;
}

}  // namespace

int maxbatch_command(const maxbatch_command_options& given, std::ostream& out,
                     std::ostream& progress, std::stop_token stop) {
  auto options = given;
  // A plan's budget asks for plans: by the default planner where none is named.
  if (options.plan_budget && !options.planner)
    options.planner = std::string(footprint::default_planner);
  check_bounds(options);
  const auto backend = backend_for(options);
  const auto spec = runtime::load_workload(options.workload, backend.vocabulary);
  TANDEM_EXPECTS(!spec.jobs.empty(), config_error,
                 spec.source +
                     ": the workload has no jobs; add a [[job]] table (maxbatch copies "
                     "the first)");
  const auto policy = options.policy.value_or(spec.policy.name);
  TANDEM_EXPECTS(
      std::find(backend.policies.begin(), backend.policies.end(), policy) != backend.policies.end(),
      config_error,
      "unknown policy '" + policy + "'" + suggest_name(policy, backend.policies) + " (known" +
          (options.simulate ? " to --sim" : "") + ": " + join_names(backend.policies) + ")");
  // The workload's own options go with its own policy only, as under `tandem run --policy`.
  const auto file_options =
      policy == spec.policy.name ? spec.policy.options : runtime::option_table{};
  const auto cases = colocated_cases(options, file_options, policy);

  // Every run's workload is checked before the first runs: a typo costs no run time. The
  // workload's own options first, so that an error there names its line.
  backend.validate(at_batch(
      identical_jobs(spec, options.jobs, options.iterations, policy, file_options), options.low));
  const auto solo_spec = identical_jobs(spec, 1, options.iterations, "exclusive", {});
  backend.validate(at_batch(solo_spec, options.low));
  std::vector<runtime::workload> colocated_specs;
  for (const auto& each : cases) {
    colocated_specs.push_back(
        identical_jobs(spec, options.jobs, options.iterations, policy, each.policy_options));
    check_option_values(colocated_specs.back());
    backend.validate(at_batch(colocated_specs.back(), options.low));
  }
  check_output_paths({options.workload}, {{"--json", options.json_path}});
  std::optional<atomic_file> json;  // opened now: a bad path costs no run time
  if (!options.json_path.empty()) json.emplace(options.json_path, "JSON");

  run_context context;
  const auto probe_of = [&](const runtime::workload& jobs_spec) -> batch_probe {
    return [&, jobs = &jobs_spec](std::int64_t batch) {
      runtime::run_result result;
      if (stop.stop_requested()) throw search_stopped{};
      try {
        result = backend.run(at_batch(*jobs, batch), stop);
      } catch (const config_error& e) {
        // Every run was checked at the low batch, but a larger one may be beyond what the model
        // or the profile generator takes.
        return probe_result{probe_outcome::refused, "cannot be run: " + first_line(e.what()), 0};
      }
      if (stop.stop_requested()) throw search_stopped{};
      context = {result.device, result.budget_bytes};
      return judge(result, options.iterations);
    };
  };
  const auto stopped = [&](const search_result& search) {
    progress << "tandem maxbatch: " << search.error
             << "\nmaxbatch tells fits from out-of-memory failures only, and needs the --low batch "
                "to run; fix the workload's first job or change --low\n";
    return 3;
  };

  search_result solo;
  std::vector<table_row> rows;
  try {
    progress << "solo: 1 job under exclusive\n";
    solo = search_max_batch(probe_of(solo_spec), {options.low, options.high, {}}, progress);
    if (!solo.error.empty()) return stopped(solo);
    TANDEM_EXPECTS(solo.max_batch > 0, config_error,
                   "--low " + std::to_string(options.low) +
                       ": even the first batch tried did not fit with one job alone, so the solo "
                       "maximum is below it and there is nothing to compare; try a smaller --low "
                       "(such as --low " +
                       std::to_string(std::max<std::int64_t>(1, options.low / 8)) +
                       ", or the default 1)");
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (options.jobs == 1 && policy == "exclusive" && cases[i].policy_options.empty()) {
        // The same runs as the solo search's: its answer stands.
        progress << "co-located: 1 job under exclusive, the solo search again: its result\n";
        rows.push_back({policy, cases[i].label, solo});
        continue;
      }
      progress << "co-located: " << options.jobs << " jobs under " << policy
               << (cases[i].label.empty() ? "" : " with " + cases[i].label) << '\n';
      auto colocated = search_max_batch(probe_of(colocated_specs[i]),
                                        {options.low, options.high, solo.max_batch + 1}, progress);
      if (!colocated.error.empty()) return stopped(colocated);
      rows.push_back({policy, cases[i].label, std::move(colocated)});
    }
  } catch (const search_stopped&) {
    progress << "tandem maxbatch: stopped before the search ended; a search cut short has no "
                "answer, so there is no table"
             << (json ? " and no JSON (the file was left as it was)" : "")
             << "; the runs that ended are listed above\n";
    return 3;
  }

  const auto& model_job = spec.jobs.front();
  out << spec.source << ": " << options.jobs << " copies of job '" << model_job.name << "' ("
      << model_job.model << "), " << options.iterations << " iterations each, on " << context.device
      << ", budget " << format_bytes(context.budget_bytes);
  if (options.planner) {
    out << ", each job planned by " << *options.planner << " for "
        << (options.plan_budget ? runtime::parse_footprint_budget(*options.plan_budget).describe()
                                : std::string(options.simulate ? "its share of the budget"
                                                               : "80% of its share of the budget"));
  }
  out << '\n';
  print_table(rows, solo, options.jobs, out);
  if (json) {
    auto solo_json = search_json(solo);
    solo_json["policy"] = "exclusive";
    auto colocated_json = nlohmann::json::array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto row = search_json(rows[i].colocated);
      row["policy"] = rows[i].policy;
      row["policy_options"] = options_json(cases[i].policy_options);
      row["ratio_percent"] = optional_json(ratio_percent(rows[i].colocated, solo));
      colocated_json.push_back(std::move(row));
    }
    const nlohmann::json document{
        {"workload", spec.source},
        {"job", model_job.name},
        {"model", model_job.model},
        {"jobs", options.jobs},
        {"iterations", options.iterations},
        {"simulated", options.simulate},
        {"planner", options.planner ? nlohmann::json(*options.planner) : nlohmann::json(nullptr)},
        {"plan_budget",
         options.plan_budget ? nlohmann::json(*options.plan_budget) : nlohmann::json(nullptr)},
        {"device", context.device},
        {"budget_bytes", context.budget_bytes},
        {"solo", solo_json},
        {"colocated", colocated_json}};
    json->stream() << document.dump(2) << '\n';
    json->commit();
    out << "results: " << options.json_path << '\n';
  }
  return 0;
}

}  // namespace tandem::cli
