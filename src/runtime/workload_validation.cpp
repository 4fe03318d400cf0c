#include "tandem/runtime/workload_validation.hpp"

#include <algorithm>
#include <variant>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/memory/pool_options.hpp"
#include "tandem/runtime/workload_limits.hpp"

namespace tandem::runtime {
namespace {

/// The budget override against the capacity; the region size against the budget and the
/// pool's own rules (what device_pool would refuse when `tandem run` builds it).
void check_device(const workload& spec, const policy_overrides& overrides) {
  if (overrides.budget) {
    TANDEM_EXPECTS(*overrides.budget > 0 && *overrides.budget <= spec.device.capacity, config_error,
                   "--budget " + format_bytes(*overrides.budget) +
                       " must be above 0 and at most the device capacity " +
                       format_bytes(spec.device.capacity) + " of " + spec.source +
                       "; lower it or raise [device] capacity (leave --budget out to use the "
                       "workload's budget)");
  }
  memory::pool_options pool;
  const bool default_region = spec.device.region_size == 0;
  if (!default_region) pool.region_size = spec.device.region_size;
  pool.capacity = spec.device.capacity;
  pool.budget = budget_of(spec, overrides);
  if (pool.region_size > pool.budget && overrides.budget) {
    TANDEM_FAIL(config_error, "--budget " + format_bytes(pool.budget) + " is below one region (" +
                                  format_bytes(pool.region_size) +
                                  (default_region ? ", the default" : "") + " in " + spec.source +
                                  "): no job could hold even one; raise --budget to at least " +
                                  format_bytes(pool.region_size));
  }
  if (pool.region_size > pool.budget) {
    const bool whole_capacity = !overrides.budget && spec.device.budget == 0;
    fail_at(spec, spec.device.line,
            "the region size " + format_bytes(pool.region_size) +
                (default_region ? " (the default)" : "") + " is larger than the budget " +
                format_bytes(pool.budget) + (whole_capacity ? " (the whole capacity)" : "") +
                ": no job could hold even one region; set [device] region_size to a power of "
                "two of at least 2 MiB within the budget, such as \"2MiB\", or raise the budget");
  }
  try {
    pool.validate();
  } catch (const config_error& e) {
    fail_at(spec, spec.device.line, e.what());
  }
}

/// A job's batch and count, which commands may set after the file was read (maxbatch, sweeps).
void check_job_limits(const workload& spec, const job_spec& job) {
  const std::string at = "job '" + job.name + "': ";
  if (job.batch_size < 1 || job.batch_size > max_batch_size) {
    fail_at(spec, job.line,
            at + "batch_size must be from 1 to " + std::to_string(max_batch_size) + ", not " +
                std::to_string(job.batch_size));
  }
  if (job.iterations && (*job.iterations < 1 || *job.iterations > max_iterations)) {
    fail_at(spec, job.line,
            at + (job.kind == job_kind::inference ? "requests" : "iterations") +
                " must be from 1 to " + std::to_string(max_iterations) + ", not " +
                std::to_string(*job.iterations));
  }
}

/// A zoo model's options against the table the zoo and the simulator share: each option at its
/// own line, then the rules between them at the job's.
void check_model_options(const workload& spec, const job_spec& job) {
  const auto* ranges = models::zoo_option_ranges(job.model);
  if (ranges == nullptr) return;  // the caller's model (the simulator's papers' models)
  const auto values = model_option_values(spec, job);
  const auto known = models::option_names(*ranges);
  for (const auto& [key, value] : job.model_options) {
    const auto range = std::find_if(ranges->begin(), ranges->end(),
                                    [&key = key](const auto& r) { return r.name == key; });
    if (range == ranges->end()) {
      fail_at(spec, value.line,
              "model '" + job.model + "' has no option '" + key + "'" + suggest_name(key, known) +
                  " (its options: " + join_names(known) + ")");
    }
    try {
      models::check_option_value(job.model, *range, values.at(key));
    } catch (const config_error& e) {
      fail_at(spec, value.line, "job '" + job.name + "': " + e.what());
    }
  }
  try {
    models::check_zoo_options(job.model, values);
  } catch (const config_error& e) {
    fail_at(spec, job.line, "job '" + job.name + "': " + e.what());
  }
}

}  // namespace

models::option_values model_option_values(const workload& spec, const job_spec& job) {
  models::option_values values;
  for (const auto& [key, value] : job.model_options) {
    if (const auto* integer = std::get_if<std::int64_t>(&value.value)) {
      values[key] = static_cast<double>(*integer);
    } else if (const auto* real = std::get_if<double>(&value.value)) {
      values[key] = *real;
    } else {
      fail_at(spec, value.line,
              "model option " + key + " must be a number, not " + describe(value));
    }
  }
  return values;
}

void validate_device_and_policy(const workload& spec, const policy_overrides& overrides) {
  check_device(spec, overrides);
  validate_policy(spec, overrides);
}

void check_planner_spec(const std::string& spec, const std::string& what) {
  const auto known = footprint::planner_spellings();
  const auto name = std::string(footprint::planner_name_of(spec));
  TANDEM_EXPECTS(std::find(known.begin(), known.end(), name) != known.end(), config_error,
                 what + ": unknown planner '" + name + "'" + suggest_name(name, known) +
                     " (known: " + join_names(known) + ")");
  try {
    static_cast<void>(footprint::make_planner(spec));  // its options
  } catch (const usage_error& e) {
    throw config_error(what + ": " + e.what());
  }
}

void validate_workload(const workload& spec, const policy_overrides& overrides) {
  TANDEM_EXPECTS(!spec.jobs.empty(), config_error,
                 spec.source + ": the workload has no jobs; add a [[job]] table");
  TANDEM_EXPECTS(spec.jobs.size() <= max_jobs, config_error,
                 spec.source + ": the workload has " + std::to_string(spec.jobs.size()) +
                     " jobs; tandem takes at most " + std::to_string(max_jobs) +
                     " in one workload: split it into several");
  validate_device_and_policy(spec, overrides);
  if (overrides.planner) check_planner_spec(*overrides.planner, "--planner");
  for (const auto& job : spec.jobs) {
    check_job_limits(spec, job);
    check_model_options(spec, job);
  }
}

}  // namespace tandem::runtime
