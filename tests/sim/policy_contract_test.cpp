// The policy contract (policy.hpp), written once and run for every registered policy through
// the one driver (schedule::policy_driver) in the simulator: random workloads of 1 to 8 jobs
// that arrive online, with the budget lowered below what the jobs hold together and raised
// again while they run, and with one job of two or more made to fail mid-iteration (or while it
// is built). What every policy owes, and what the memory-aware ones owe on top:
// - progress: no job is left waiting with no event to come (the driver's stall verdict);
// - the budget is never promised twice: under a memory-aware policy (and exclusive) no job
//   runs out of memory, even while the budget is lowered, as long as each job fits alone;
// - temporal keeps every job resident: it owes that only when all jobs' persistent memory
//   plus the largest iteration fits;
// - spatial and static may fail a job, and then only as out of memory;
// - a departure mid-iteration is the departing job's alone: the others owe what they owed;
// - the pool's accounting is never exceeded (peak held within the largest budget), and the
//   live tensors counted never exceed the regions held.
// Real jobs under every policy, with departures mid-iteration, are in
// tests/runtime/isolation_test.cpp; a short real case of this suite is in
// tests/runtime/session_test.cpp (every registered policy trains).

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>

#include "tandem/common/units.hpp"
#include "tandem/runtime/workload_policy.hpp"
#include "tandem/schedule/registry.hpp"
#include "tandem/sim/simulator.hpp"

namespace tandem::sim {
namespace {

constexpr std::size_t region = 2 * MiB;

struct scenario {
  std::vector<simulated_job> jobs;
  std::vector<runtime::budget_change> changes;
  runtime::fault_plan faults;  ///< the one job that departs mid-iteration, if two or more run
  std::size_t budget = 0;
  std::size_t largest_alone = 0;          ///< the most one job holds at its peak
  std::size_t resident_plus_largest = 0;  ///< every job's persistent + the largest iteration
};

/// A job whose iteration takes regions over its forward pass and returns them over its backward
/// pass, in random steps, with the allocations that make them (group-cutting policies read those).
std::shared_ptr<job_profile> random_profile(std::mt19937_64& random) {
  auto uniform = [&](int low, int high) {
    return std::uniform_int_distribution(low, high)(random);
  };
  auto profile = std::make_shared<job_profile>();
  profile->model = "toy";
  const auto persistent = static_cast<std::size_t>(uniform(1, 4)) * region;
  profile->persistent_tensors = {persistent};
  const double seconds = 0.2 * uniform(2, 10);
  profile->operations = {{"forward", 0.45 * seconds, 0.1 * uniform(3, 10), 0},
                         {"backward", 0.55 * seconds, 0.1 * uniform(3, 10), 0}};
  profile->held.held_at_start = persistent;
  profile->held.duration_s = seconds;
  const int steps = uniform(2, 6);
  std::vector<std::int64_t> taken;
  for (int i = 0; i < steps; ++i) {
    const auto bytes = static_cast<std::int64_t>(uniform(1, 3)) * static_cast<std::int64_t>(region);
    const double at = 0.4 * seconds * (i + 0.5) / steps;
    profile->held.steps.push_back({at, bytes});
    profile->steps.push_back({at, bytes});
    taken.push_back(bytes);
  }
  std::int64_t ephemeral = 0;
  for (const auto bytes : taken) ephemeral += bytes;
  for (int i = 0; i < steps; ++i) {
    const double at = seconds * (0.5 + 0.45 * (i + 1) / steps);
    const auto bytes = taken[static_cast<std::size_t>(steps - 1 - i)];
    profile->held.steps.push_back({at, -bytes});
    profile->steps.push_back({at, -bytes});
  }
  profile->peak_live_bytes = persistent + static_cast<std::size_t>(ephemeral);
  return profile;
}

scenario make_scenario(std::size_t job_count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  scenario s;
  std::size_t persistent_sum = 0;
  std::size_t largest_ephemeral = 0;
  for (std::size_t j = 0; j < job_count; ++j) {
    simulated_job job;
    job.spec.name = "j" + std::to_string(j);
    job.spec.model = "toy";
    // Jobs with the same model, options and batch may share what a policy measured of one
    // (Salus's signatures): these differ in memory, so they differ in batch.
    job.spec.batch_size = 8 + static_cast<std::int64_t>(j);
    job.spec.iterations = std::uniform_int_distribution(2, 5)(random);
    // Half arrive at once, the rest online.
    job.spec.arrival_s = j % 2 == 0 ? 0.0 : std::uniform_real_distribution(0.0, 4.0)(random);
    job.profile = random_profile(random);
    const auto persistent = job.profile->persistent_bytes();
    s.largest_alone = std::max(s.largest_alone, job.profile->peak_live_bytes);
    persistent_sum += persistent;
    largest_ephemeral = std::max(largest_ephemeral, job.profile->peak_live_bytes - persistent);
    s.jobs.push_back(std::move(job));
  }
  s.resident_plus_largest = persistent_sum + largest_ephemeral;
  // Between what lets every job run beside all the others' persistent memory (so that a job
  // whose peak nobody knows yet never finds its iteration blocked for good) and what all of
  // them hold at their peaks together.
  std::size_t peaks = 0;
  for (const auto& job : s.jobs) peaks += job.profile->peak_live_bytes;
  const auto low = s.resident_plus_largest / region;
  const auto high = std::max(low, peaks / region);
  s.budget = region * std::uniform_int_distribution<std::size_t>(low, high)(random);
  // Lowered to what the largest job needs alone while jobs run, then raised again.
  const double lowered_at = std::uniform_real_distribution(0.5, 3.0)(random);
  s.changes = {{lowered_at, s.largest_alone, 0},
               {lowered_at + std::uniform_real_distribution(0.5, 4.0)(random), s.budget, 0}};
  if (job_count >= 2) {
    // At any allocation of its run, its build's included, as out of memory or as an error.
    const auto& victim =
        s.jobs[std::uniform_int_distribution<std::size_t>(0, job_count - 1)(random)];
    std::size_t per_iteration = 0;
    for (const auto& step : victim.profile->steps) per_iteration += step.bytes > 0 ? 1 : 0;
    const auto allocations = victim.profile->persistent_tensors.size() +
                             per_iteration * static_cast<std::size_t>(*victim.spec.iterations);
    const auto what = std::uniform_int_distribution(0, 1)(random) == 0
                          ? runtime::injected_fault::kind::out_of_memory
                          : runtime::injected_fault::kind::error;
    s.faults = {{victim.spec.name,
                 std::uniform_int_distribution<std::size_t>(0, allocations - 1)(random), what}};
  }
  return s;
}

/// Runs scenario `s` under policy `name` through the driver in the simulator, on a device with
/// room for any budget, with its faults.
runtime::run_result simulate_scenario(const std::string& name, std::size_t jobs,
                                      const scenario& s) {
  const auto policy = schedule::make_policy(name, {s.budget, jobs, {}});
  device_model device;
  device.description = "contract";
  device.capacity = 64 * GiB;
  device.budget = s.budget;
  sim_options options;
  options.faults = s.faults;
  return simulate(s.jobs, *policy, device, s.changes, options);
}

class PolicyContract : public ::testing::TestWithParam<std::string> {};

TEST_P(PolicyContract, RandomWorkloadsKeepTheContract) {
  const auto& name = GetParam();
  int checked = 0;
  int departed = 0;
  for (std::size_t jobs = 1; jobs <= 8; ++jobs) {
    for (std::uint64_t seed = 1; seed <= 25; ++seed) {
      const auto s = make_scenario(jobs, seed * 100 + jobs);
      const auto result = simulate_scenario(name, jobs, s);
      const auto where = name + ", " + std::to_string(jobs) + " jobs, seed " +
                         std::to_string(seed) + ", budget " + format_bytes(s.budget);
      ++checked;
      EXPECT_LE(result.peak_reserved_bytes, s.budget) << where;
      // Tensors live in regions: a job waiting for the regions of an allocation has not made it.
      EXPECT_LE(result.peak_live_bytes, result.peak_reserved_bytes) << where;
      for (const auto& job : result.jobs) {
        // Progress, whatever the policy: a stall is a bug in the policy.
        EXPECT_EQ(job.error.find("no event to come"), std::string::npos)
            << where << ": " << job.error;
        if (!s.faults.empty() && job.name == s.faults.front().job) {
          // The planned departure happens wherever the job then is, under every policy, unless
          // the job failed out of memory before it got there (spatial, static).
          ++departed;
          EXPECT_EQ(job.status, runtime::job_status::failed) << where << ": " << job.name;
          if (job.error.find("injected fault") == std::string::npos) {
            EXPECT_TRUE(job.out_of_memory && (name == "spatial" || name == "static"))
                << where << ": " << job.name << ": " << job.error;
          }
          continue;
        }
        const bool owes_completion = name != "spatial" && name != "static";
        if (owes_completion) {
          EXPECT_EQ(job.status, runtime::job_status::completed)
              << where << ": " << job.name << ": " << job.error;
        } else if (job.status != runtime::job_status::completed) {
          EXPECT_TRUE(job.out_of_memory) << where << ": " << job.name << ": " << job.error;
        }
      }
    }
  }
  EXPECT_EQ(checked, 200);
  EXPECT_EQ(departed, 175);  // one job in every workload of two or more
}

/// The job's iteration under a pretend footprint plan: the same persistent memory, every region
/// take halved (at least one region), 30% longer.
std::shared_ptr<const job_profile> halved(const job_profile& plain) {
  auto planned = std::make_shared<job_profile>(plain);
  for (auto& op : planned->operations) op.solo_s *= 1.3;
  planned->held.duration_s *= 1.3;
  const auto half = [](std::int64_t bytes) {
    const auto regions = std::max<std::int64_t>(1, bytes / static_cast<std::int64_t>(region) / 2);
    return (bytes < 0 ? -1 : 1) * regions * static_cast<std::int64_t>(region);
  };
  for (auto& step : planned->held.steps) {
    step.at_s *= 1.3;
    step.delta = half(step.delta);
  }
  for (auto& step : planned->steps) {
    step.at_s *= 1.3;
    step.bytes = half(step.bytes);
  }
  std::int64_t most = 0;
  std::int64_t live = 0;
  for (const auto& step : planned->steps) most = std::max(most, live += step.bytes);
  planned->peak_live_bytes = planned->persistent_bytes() + static_cast<std::size_t>(most);
  return planned;
}

// The same contract for a policy that chooses footprints (chooses_footprint.hpp), with every
// job offered a plan that halves its iteration's memory: the budget stays hard, every job that
// owes completion completes, and plans are chosen (or the test could not fail for ignoring them).
class FootprintChoosingContract : public ::testing::TestWithParam<std::string> {};

TEST_P(FootprintChoosingContract, RandomWorkloadsWithPlansKeepTheContract) {
  const auto& name = GetParam();
  double planned = 0;
  for (std::size_t jobs = 1; jobs <= 8; ++jobs) {
    for (std::uint64_t seed = 1; seed <= 25; ++seed) {
      auto s = make_scenario(jobs, seed * 100 + jobs);
      for (auto& job : s.jobs) {
        auto variants = std::make_shared<footprint_variants>();
        variants->profiles = {job.profile, halved(*job.profile)};
        variants->labels = {"none", "halved"};
        job.variants = std::move(variants);
      }
      const auto result = simulate_scenario(name, jobs, s);
      const auto where = name + ", " + std::to_string(jobs) + " jobs, seed " +
                         std::to_string(seed) + ", budget " + format_bytes(s.budget);
      EXPECT_LE(result.peak_reserved_bytes, s.budget) << where;
      for (const auto& job : result.jobs) {
        if (!s.faults.empty() && job.name == s.faults.front().job) continue;
        EXPECT_EQ(job.status, runtime::job_status::completed)
            << where << ": " << job.name << ": " << job.error;
        for (const auto& statistic : job.policy_stats) {
          if (statistic.name == "planned") planned += statistic.value;
        }
      }
    }
  }
  EXPECT_GT(planned, 0) << "no iteration ran under a plan";
}

INSTANTIATE_TEST_SUITE_P(EveryChoosingPolicy, FootprintChoosingContract,
                         ::testing::ValuesIn(runtime::policies_choosing_footprints()),
                         [](const auto& param) { return param.param; });

INSTANTIATE_TEST_SUITE_P(EveryPolicy, PolicyContract, ::testing::ValuesIn(schedule::policy_names()),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace tandem::sim
