// A job's failure stays its own (issue 14): a job that fails at any point (its model cannot be
// built, an allocation is refused, an operator throws in forward, backward or the optimizer step)
// releases its memory and never touches another job's. Every survivor's per-iteration losses
// are bitwise those of its solo run (CPU training with fixed seeds and one thread is
// deterministic), under every policy; the pool reports no refused free and is empty at the end.
//
// The randomized test runs TANDEM_FAULT_CASES cases (default 200; 2000 for a long run):
//   TANDEM_FAULT_CASES=2000 build/tests/runtime/tandem_isolation_test

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "losses_of.hpp"
#include "tandem/runtime/fault_injection.hpp"
#include "tandem/runtime/session.hpp"
#include "tandem/schedule/registry.hpp"

namespace tandem::runtime {
namespace {

/// A small job the cases draw from: a model, its options and how long it trains.
struct job_shape {
  std::string model;
  std::string options;  ///< the [job.model_options] table's lines
  int batch = 8;
};

const std::vector<job_shape>& shapes() {
  static const std::vector<job_shape> all = {
      {"mlp", "hidden = 32\nimage_side = 8\n", 8},
      {"mlp", "hidden = 64\nlayers = 2\nimage_side = 8\n", 16},
      {"lstm", "hidden = 32\nsequence_length = 8\nvocabulary = 100\n", 8},
      {"resnet20", "image_side = 8\nwidth_multiplier = 0.25\n", 4},
  };
  return all;
}

struct job_plan {
  std::string name;
  std::size_t shape = 0;
  int iterations = 3;
  int arrival_ms = 0;
  int seed = 7;
  bool adam = false;  ///< else sgd
};

std::string job_table(const job_plan& job) {
  const auto& shape = shapes()[job.shape];
  std::ostringstream out;
  out << "[[job]]\nname = \"" << job.name << "\"\nmodel = \"" << shape.model
      << "\"\nbatch_size = " << shape.batch << "\noptimizer = \"" << (job.adam ? "adam" : "sgd")
      << "\"\nlearning_rate = 0.01\niterations = " << job.iterations << "\narrival = \""
      << job.arrival_ms << "ms\"\nthreads = 1\n"
      << "[job.model_options]\n"
      << shape.options << "seed = " << job.seed << "\n\n";
  return out.str();
}

workload make_workload(const std::string& policy, std::size_t budget_mib,
                       const std::vector<job_plan>& jobs) {
  std::ostringstream text;
  text << "[device]\nkind = \"cpu\"\ncapacity = \"512MiB\"\nbudget = \"" << budget_mib
       << "MiB\"\nregion_size = \"2MiB\"\n\n[policy]\nname = \"" << policy << "\"\n\n";
  for (const auto& job : jobs) text << job_table(job);
  return parse_workload(text.str(), "isolation.toml", training_vocabulary());
}

using testing::losses_of;

/// What a job does alone: its losses, allocations and the regions it held at its peak.
struct solo_run {
  std::vector<double> losses;
  std::size_t allocations = 0;
  std::size_t peak_reserved_bytes = 0;
};

/// Solo runs, keyed by the job's table without its arrival (which does not change its numbers).
solo_run& solo(const job_plan& job) {
  static std::map<std::string, solo_run> cache;
  job_plan alone = job;
  alone.arrival_ms = 0;
  const auto key = job_table(alone);
  if (auto found = cache.find(key); found != cache.end()) return found->second;
  const auto run = run_workload(make_workload("exclusive", 256, {alone}));
  EXPECT_EQ(run.jobs.at(0).status, job_status::completed) << run.jobs.at(0).error;
  auto& entry = cache[key];
  entry.losses = losses_of(run.jobs.at(0));
  entry.allocations = run.jobs.at(0).allocations;
  entry.peak_reserved_bytes = run.jobs.at(0).peak_reserved_bytes;
  return entry;
}

/// Policies that promise every job fits: memory-aware ones, and exclusive, which runs one job at
/// a time. temporal alternates iterations while every job's weights stay resident, and spatial
/// and static share without a plan: under them a survivor may itself run out of memory.
bool memory_aware(const std::string& policy) {
  return policy != "temporal" && policy != "spatial" && policy != "static";
}

/// Runs the case and checks every promise; returns a description for failure messages.
void check_case(const std::string& policy, std::size_t budget_mib,
                const std::vector<job_plan>& jobs, const fault_plan& faults,
                const std::string& label) {
  SCOPED_TRACE(label);
  run_options options;
  options.faults = faults;
  const auto run = run_workload(make_workload(policy, budget_mib, jobs), options);
  EXPECT_TRUE(run.warnings.empty()) << "the pool reported: " << run.warnings.front();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& job = run.jobs.at(i);
    const bool faulty = std::any_of(faults.begin(), faults.end(),
                                    [&](const auto& fault) { return fault.job == job.name; });
    if (faulty) {
      EXPECT_EQ(job.status, job_status::failed) << job.name << " was meant to fail";
      // Under a baseline that breaks the budget it may run out of memory before its fault.
      const bool ran_out_first = !memory_aware(policy) && job.out_of_memory;
      EXPECT_TRUE(job.error.find("injected fault") != std::string::npos || ran_out_first)
          << job.name << " failed, but not of its fault: " << job.error;
      continue;
    }
    const auto expected = solo(jobs[i]).losses;
    const auto losses = losses_of(job);
    if (job.status == job_status::completed) {
      EXPECT_EQ(losses, expected) << job.name << "'s losses differ from its solo run";
      continue;
    }
    // Only a baseline without a memory plan may run a survivor out of memory, and what the
    // survivor computed before must still be what it computes alone.
    EXPECT_FALSE(memory_aware(policy))
        << job.name << " failed under " << policy << ": " << job.error;
    EXPECT_TRUE(job.out_of_memory) << job.name << " failed other than by OOM: " << job.error;
    ASSERT_LE(losses.size(), expected.size());
    EXPECT_TRUE(std::equal(losses.begin(), losses.end(), expected.begin()))
        << job.name << " computed on corrupted data before running out of memory";
  }
}

// The case a new user met (issue 14): a ResNet runs out of memory mid-iteration beside an LSTM;
// the LSTM's token indices were overwritten through memory the ResNet had left behind.
TEST(Isolation, AJobThatRunsOutOfMemoryLeavesItsNeighbourAsItWouldBeAlone) {
  const std::vector<job_plan> jobs = {{"resnet", 3, 4, 0, 1, false}, {"lm", 2, 6, 0, 2, true}};
  const auto& resnet = solo(jobs[0]);
  for (const auto* policy : {"temporal", "exclusive", "scrooge", "nodegroup", "srtf"}) {
    for (const auto point :
         {std::size_t{0}, resnet.allocations / 3, resnet.allocations / 2, resnet.allocations - 1}) {
      for (const auto what : {injected_fault::kind::out_of_memory, injected_fault::kind::error}) {
        check_case(policy, 64, jobs, {{"resnet", point, what}},
                   std::string(policy) + ", resnet fails at allocation " + std::to_string(point) +
                       (what == injected_fault::kind::error ? " (exception)" : " (OOM)"));
      }
    }
  }
}

// An iteration that lets go (as when every running iteration waits for another) runs again
// from where it began: the job that restarted and its neighbour compute what they compute alone.
// The restart strikes at the first allocation of a forward or backward pass at or after the
// point; the ResNet's batch-norm statistics, which the cut pass updated, are put back, and a
// backward pass's half-run graph goes with the job's thread (it goes on on a new one).
TEST(Isolation, AnIterationRestartedInItsForwardOrBackwardPassLeavesEveryLossAsAlone) {
  const std::vector<job_plan> jobs = {{"resnet", 3, 4, 0, 1, false}, {"lm", 2, 6, 0, 2, true}};
  for (std::size_t restarting = 0; restarting < jobs.size(); ++restarting) {
    const auto& name = jobs[restarting].name;
    const auto allocations = static_cast<double>(solo(jobs[restarting]).allocations);
    for (const auto* policy : {"exclusive", "scrooge", "nodegroup", "srtf"}) {
      for (const auto share : {0.3, 0.45, 0.6, 0.75}) {
        const auto point = static_cast<std::size_t>(share * allocations);
        SCOPED_TRACE(std::string(policy) + ", " + name + " restarts at allocation " +
                     std::to_string(point));
        run_options options;
        options.faults = {{name, point, injected_fault::kind::restart}};
        const auto run = run_workload(make_workload(policy, 64, jobs), options);
        EXPECT_TRUE(run.warnings.empty()) << "the pool reported: " << run.warnings.front();
        for (std::size_t i = 0; i < jobs.size(); ++i) {
          const auto& job = run.jobs.at(i);
          ASSERT_EQ(job.status, job_status::completed) << job.name << ": " << job.error;
          EXPECT_EQ(job.restarts, i == restarting ? 1 : 0) << job.name;
          ASSERT_EQ(job.restarted_attempts.size(), static_cast<std::size_t>(job.restarts));
          for (const auto& attempt : job.restarted_attempts) {
            EXPECT_LE(attempt.start_s, attempt.end_s) << job.name;
          }
          EXPECT_EQ(losses_of(job), solo(jobs[i]).losses) << job.name;
        }
      }
    }
  }
}

/// `job`'s workload text with a footprint planner: its plan swaps and recomputes tensors.
workload with_planner(const std::string& policy, const std::vector<job_plan>& jobs,
                      const std::string& planned_job, const std::string& planner) {
  std::ostringstream text;
  text << "[device]\nkind = \"cpu\"\ncapacity = \"512MiB\"\nbudget = \"64MiB\"\n"
       << "region_size = \"2MiB\"\n\n[policy]\nname = \"" << policy << "\"\n\n";
  for (const auto& job : jobs) {
    auto table = job_table(job);
    if (job.name == planned_job) {
      table.insert(table.find("[job.model_options]"),
                   "planner = \"" + planner + "\"\nplan_budget = \"60%\"\n");
    }
    text << table;
  }
  return parse_workload(text.str(), "isolation.toml", training_vocabulary());
}

// A job under a footprint plan (copies under way on the shared copy engine, storages pointing
// at host copies, tensors dropped for recompute) fails at any point: its neighbour computes what
// it computes alone. Unfailed, the planned job computes what it computes unplanned.
TEST(Isolation, APlannedJobThatFailsMidIterationLeavesItsNeighbourAsItWouldBeAlone) {
  const std::vector<job_plan> jobs = {{"resnet", 3, 6, 0, 1, false}, {"lm", 2, 6, 0, 2, true}};
  for (const std::string planner : {"none", "vdnn-all", "capuchin", "checkpoint"}) {
    const auto clean = run_workload(with_planner("exclusive", jobs, "resnet", planner));
    const auto& resnet = clean.jobs.at(0);
    ASSERT_EQ(resnet.status, job_status::completed) << resnet.error;
    EXPECT_TRUE(clean.warnings.empty()) << "the pool reported: " << clean.warnings.front();
    ASSERT_TRUE(resnet.footprint.has_value());
    EXPECT_EQ(resnet.footprint->planned_iterations, 2u);
    // The planned iterations (the last two) name the planner, and what they moved adds up
    // to what the executor counted over them.
    runtime::plan_traffic moved;
    for (std::size_t i = 0; i < resnet.iteration_log.size(); ++i) {
      const auto& it = resnet.iteration_log[i];
      EXPECT_EQ(it.plan, i >= 4 ? planner : "") << planner << ", iteration " << i;
      moved.swapped_out_bytes += it.traffic.swapped_out_bytes;
      moved.swapped_in_bytes += it.traffic.swapped_in_bytes;
    }
    EXPECT_EQ(moved.swapped_out_bytes, resnet.footprint->swapped_out_bytes) << planner;
    EXPECT_EQ(moved.swapped_in_bytes, resnet.footprint->swapped_in_bytes) << planner;
    EXPECT_EQ(losses_of(resnet), solo(jobs[0]).losses) << planner << " changed the losses";
    for (const auto* policy : {"exclusive", "temporal", "scrooge"}) {
      // Faults late enough to strike the planned iterations (the last three of six).
      for (const auto share : {0.6, 0.75, 0.9}) {
        const auto point =
            static_cast<std::size_t>(share * static_cast<double>(resnet.allocations));
        for (const auto what : {injected_fault::kind::out_of_memory, injected_fault::kind::error}) {
          SCOPED_TRACE(planner + " under " + policy + ", resnet fails at allocation " +
                       std::to_string(point));
          run_options options;
          options.faults = {{"resnet", point, what}};
          const auto run = run_workload(with_planner(policy, jobs, "resnet", planner), options);
          EXPECT_TRUE(run.warnings.empty()) << "the pool reported: " << run.warnings.front();
          EXPECT_EQ(run.jobs.at(0).status, job_status::failed);
          EXPECT_EQ(run.jobs.at(1).status, job_status::completed) << run.jobs.at(1).error;
          EXPECT_EQ(losses_of(run.jobs.at(1)), solo(jobs[1]).losses);
        }
      }
    }
  }
}

// A planned job's iteration that restarts anywhere in its planned iterations (with tensors on
// the host, copies under way, tensors dropped for recompute, and under tensile parameters and
// momenta swapped across iterations) runs again as it ran the first time: both jobs compute
// what they compute alone.
TEST(Isolation, APlannedIterationRestartedAnywhereLeavesEveryLossAsAlone) {
  const std::vector<job_plan> jobs = {{"resnet", 3, 6, 0, 1, false}, {"lm", 2, 6, 0, 2, true}};
  for (const std::string planner : {"vdnn-all", "capuchin", "checkpoint", "tensile"}) {
    const auto clean = run_workload(with_planner("exclusive", jobs, "resnet", planner));
    ASSERT_EQ(clean.jobs.at(0).status, job_status::completed) << clean.jobs.at(0).error;
    const auto allocations = static_cast<double>(clean.jobs.at(0).allocations);
    for (const auto* policy : {"scrooge", "nodegroup"}) {
      for (const auto share : {0.68, 0.74, 0.8, 0.86, 0.92}) {
        const auto point = static_cast<std::size_t>(share * allocations);
        SCOPED_TRACE(planner + " under " + policy + ", resnet restarts at allocation " +
                     std::to_string(point));
        run_options options;
        options.faults = {{"resnet", point, injected_fault::kind::restart}};
        const auto run = run_workload(with_planner(policy, jobs, "resnet", planner), options);
        EXPECT_TRUE(run.warnings.empty()) << "the pool reported: " << run.warnings.front();
        for (std::size_t i = 0; i < jobs.size(); ++i) {
          const auto& job = run.jobs.at(i);
          ASSERT_EQ(job.status, job_status::completed) << job.name << ": " << job.error;
          EXPECT_EQ(job.restarts, i == 0 ? 1 : 0) << job.name;
          EXPECT_EQ(losses_of(job), solo(jobs[i]).losses) << job.name;
        }
        // The iteration run again, the first to start after the cut, ran under the plan.
        const auto& resnet = run.jobs.at(0);
        ASSERT_EQ(resnet.restarted_attempts.size(), 1u);
        const auto again = std::find_if(
            resnet.iteration_log.begin(), resnet.iteration_log.end(),
            [&](const auto& it) { return it.start_s >= resnet.restarted_attempts.front().end_s; });
        ASSERT_NE(again, resnet.iteration_log.end());
        EXPECT_FALSE(again->plan.empty()) << "the restart struck an unplanned iteration";
      }
    }
  }
}

// A real out-of-memory, not an injected one: spatial sharing under a budget that fits each job
// alone but not both at their peaks.
TEST(Isolation, ARealOutOfMemoryUnderSpatialSharingNeverCorruptsASurvivor) {
  const std::vector<job_plan> jobs = {
      {"resnet", 3, 4, 0, 1, false}, {"lm", 2, 6, 0, 2, true}, {"mlp", 1, 6, 0, 3, true}};
  std::size_t largest = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    largest = std::max(largest, solo(jobs[i]).peak_reserved_bytes);
  }
  check_case("spatial", largest / (1024 * 1024), jobs, {}, "spatial at the largest solo peak");
}

std::size_t from_environment(const char* name, std::size_t otherwise) {
  const char* text = std::getenv(name);
  return text != nullptr ? std::strtoul(text, nullptr, 10) : otherwise;
}

// Random (policy, budget, fault point, 2-4 jobs) cases, seeded so that a failure names its case.
TEST(Isolation, RandomFaultsUnderEveryPolicyStayTheirJobsOwn) {
  const auto& policies = schedule::policy_names();
  std::mt19937_64 random(20261124);
  const auto cases = from_environment("TANDEM_FAULT_CASES", 200);
  const auto first = from_environment("TANDEM_FAULT_FIRST", 0);  // to replay one failing case
  for (std::size_t c = 0; c < cases; ++c) {
    const auto& policy = policies[random() % policies.size()];
    std::vector<job_plan> jobs(2 + random() % 3);
    std::size_t largest = 0;
    std::size_t total = 0;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      jobs[i] = {"job" + std::to_string(i),          random() % shapes().size(),
                 2 + static_cast<int>(random() % 3), static_cast<int>(random() % 3) * 10,
                 static_cast<int>(random() % 4),     random() % 2 == 0};
      const auto peak = solo(jobs[i]).peak_reserved_bytes;
      largest = std::max(largest, peak);
      total += peak;
    }
    // From a budget where only one job fits at a time to one where all fit together.
    const std::size_t mib = 1024 * 1024;
    const auto low = largest / mib;
    const auto high = std::max(low, total / mib);
    const auto budget = low + random() % (high - low + 1);
    fault_plan faults;
    const auto failing = 1 + random() % (jobs.size() - 1);  // at least one survivor
    for (std::size_t f = 0; f < failing; ++f) {
      const auto& victim = jobs[random() % jobs.size()];
      if (std::any_of(faults.begin(), faults.end(),
                      [&](const auto& fault) { return fault.job == victim.name; })) {
        continue;
      }
      faults.push_back(
          {victim.name, random() % solo(victim).allocations,
           random() % 2 == 0 ? injected_fault::kind::out_of_memory : injected_fault::kind::error});
    }
    std::ostringstream label;
    label << "case " << c << ": " << policy << ", budget " << budget << " MiB, " << jobs.size()
          << " jobs";
    for (const auto& fault : faults) label << ", " << fault.job << " fails at " << fault.allocation;
    if (c < first) continue;
    check_case(policy, budget, jobs, faults, label.str());
    if (std::getenv("TANDEM_FAULT_VERBOSE") != nullptr) {
      std::printf("%s\n%s", label.str().c_str(), "without its faults:\n");
      const auto clean = run_workload(make_workload(policy, budget, jobs));
      for (const auto& job : clean.jobs) {
        std::printf("  %s %s %s\n", job.name.c_str(), to_string(job.status), job.error.c_str());
      }
      for (const auto& job : jobs) std::printf("%s", job_table(job).c_str());
    }
    if (::testing::Test::HasFailure()) break;  // one case's story is enough to debug
  }
}

}  // namespace
}  // namespace tandem::runtime
