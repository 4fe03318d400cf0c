// Co-scheduling and footprint reduction decided together in the simulator (issue 19): a job's
// iteration offered plain and under plans (footprint_variants.hpp), scrooge choosing at every
// start (`[policy] planner`), and the errors a user can make with it.

#include <gtest/gtest.h>

#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/sim/footprint_variants.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/profile_generator.hpp"
#include "tandem/sim/region_replay.hpp"
#include "tandem/sim/sequence_generator.hpp"
#include "tandem/sim/workload_sim.hpp"

namespace tandem::sim {
namespace {

/// Two identical GNMT at batch 64 on a 2080 Ti: each alone holds about 5 GiB at its peak, so a
/// budget of 6 GiB lets only one iteration run at a time unless plans shrink them.
std::string two_gnmt(const std::string& policy_lines) {
  std::string text =
      "[device]\ncapacity = \"11GiB\"\nbudget = \"6GiB\"\n\n[policy]\n" + policy_lines + "\n";
  for (const char* name : {"a", "b"}) {
    text += std::string("\n[[job]]\nname = \"") + name +
            "\"\nmodel = \"gnmt\"\nbatch_size = 64\niterations = 12\n"
            "model_options = { framework = 1 }\n";
  }
  return text;
}

runtime::run_result simulate_text(const std::string& text, sim_setup setup = {}) {
  if (!setup.gpu && setup.recorded == nullptr) setup.gpu = "2080ti";
  const auto spec = runtime::parse_workload(text, "test.toml", simulation_vocabulary(setup));
  return simulate_workload(spec, setup);
}

std::string error_of(const std::string& text, sim_setup setup = {}) {
  try {
    static_cast<void>(simulate_text(text, std::move(setup)));
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

double statistic(const runtime::run_result& result, const std::string& name) {
  for (const auto& s : result.policy_stats) {
    if (s.name == name) return s.value;
  }
  return -1;
}

TEST(FootprintVariants, EveryPlanHoldsTheSameRegionsBetweenIterationsAndLessAtItsPeak) {
  const auto& gpu = find_gpu("2080ti");
  const model_request request{
      .model = "gnmt", .batch_size = 64, .options = {{"framework", 1}}, .optimizer = "sgd"};
  auto plain = generate_profile(request, gpu);
  replay_regions(plain, 64 * MiB);
  const auto shared = std::make_shared<const job_profile>(std::move(plain));
  const auto made = make_footprint_variants(shared, generate_access_sequence(request, gpu),
                                            "tensile", gpu.pcie_bandwidth, 64 * MiB);
  ASSERT_GE(made.profiles.size(), 2u);
  ASSERT_EQ(made.labels.size(), made.profiles.size());
  EXPECT_EQ(made.profiles.front(), shared);
  EXPECT_EQ(made.labels.front(), "none");
  const auto offer = made.offer();
  ASSERT_EQ(offer.size(), made.profiles.size());
  for (std::size_t k = 1; k < made.profiles.size(); ++k) {
    const auto& profile = *made.profiles[k];
    EXPECT_EQ(profile.persistent_tensors, shared->persistent_tensors) << k;
    EXPECT_EQ(profile.held.held_at_start, shared->held.held_at_start) << k;
    EXPECT_EQ(profile.held.held_at_end(), profile.held.held_at_start) << k;
    EXPECT_LE(profile.held.peak() + 64 * MiB, made.profiles[k - 1]->held.peak()) << k;
    EXPECT_GE(offer[k].iteration_s, offer[0].iteration_s * 0.999) << k;
    EXPECT_NE(made.labels[k].find("tensile at "), std::string::npos) << made.labels[k];
  }
}

TEST(CoscheduledPlans, TwoJobsThatOnlyFitOneAtATimeRunTogetherUnderPlans) {
  const auto serialized = simulate_text(two_gnmt("name = \"scrooge\""));
  const auto planned = simulate_text(two_gnmt("name = \"scrooge\"\nplanner = \"tensile\""));
  for (const auto* result : {&serialized, &planned}) {
    EXPECT_EQ(result->failed_jobs(), 0u);
    EXPECT_LE(result->peak_reserved_bytes, 6 * GiB);
  }
  EXPECT_EQ(statistic(serialized, "shared_starts"), 0);
  EXPECT_GT(statistic(planned, "planned"), 0);
  EXPECT_GT(statistic(planned, "shared_starts"), 0);
  // Each iteration's record names its plan and what the plan moved, as many as the policy
  // counted; a plain iteration has neither.
  double recorded = 0;
  for (const auto& job : planned.jobs) {
    for (const auto& it : job.iteration_log) {
      if (it.plan.empty()) {
        EXPECT_EQ(it.traffic, runtime::plan_traffic{}) << job.name;
        continue;
      }
      ++recorded;
      EXPECT_NE(it.plan.find("tensile at "), std::string::npos) << it.plan;
      EXPECT_GT(it.traffic.swapped_out_bytes + it.traffic.swapped_in_bytes, 0u) << it.plan;
    }
  }
  EXPECT_EQ(recorded, statistic(planned, "planned"));
  // Side by side under plans beats one at a time: 1.5x measured when this was written.
  EXPECT_LT(planned.makespan_s, 0.8 * serialized.makespan_s)
      << planned.makespan_s << " s against " << serialized.makespan_s << " s";
}

TEST(CoscheduledPlans, NodegroupRunsJobsWhosePlainIterationCannotFitUnderPlans) {
  // At 4 GiB neither GNMT's plain iteration (4.8 GiB of regions at its peak) fits at all.
  const auto budget = [](std::string text) {
    return text.replace(text.find("budget = \"6GiB\""), 16, "budget = \"4GiB\"");
  };
  const auto plain = simulate_text(budget(two_gnmt("name = \"nodegroup\"")));
  EXPECT_EQ(plain.failed_jobs(), 2u);
  const auto planned =
      simulate_text(budget(two_gnmt("name = \"nodegroup\"\nplanner = \"tensile\"")));
  EXPECT_EQ(planned.failed_jobs(), 0u);
  EXPECT_LE(planned.peak_reserved_bytes, 4 * GiB);
  for (const auto& job : planned.jobs) {
    EXPECT_EQ(job.iterations, 12) << job.name;
    double planned_iterations = 0;
    for (const auto& s : job.policy_stats) {
      if (s.name == "planned") planned_iterations = s.value;
    }
    EXPECT_EQ(planned_iterations, 12) << job.name;
    for (const auto& it : job.iteration_log) {
      EXPECT_NE(it.plan.find("tensile at "), std::string::npos) << job.name;
    }
  }
}

TEST(CoscheduledPlans, ThePolicyPlannerIsOverriddenOrTurnedOffFromTheCommandLine) {
  sim_setup off;
  off.overrides.policy_planner = "none";
  const auto plain = simulate_text(two_gnmt("name = \"scrooge\"\nplanner = \"tensile\""), off);
  EXPECT_EQ(statistic(plain, "planned"), 0);
  sim_setup on;
  on.overrides.policy_planner = "tensile";
  const auto planned = simulate_text(two_gnmt("name = \"scrooge\""), on);
  EXPECT_GT(statistic(planned, "planned"), 0);
}

TEST(CoscheduledPlans, MistakesAreNamedWithWhatToDo) {
  const auto temporal = error_of(two_gnmt("name = \"temporal\"\nplanner = \"tensile\""));
  EXPECT_NE(temporal.find("policy 'temporal' cannot run jobs under footprint plans"),
            std::string::npos)
      << temporal;
  EXPECT_NE(temporal.find("scrooge"), std::string::npos) << temporal;
  EXPECT_NE(temporal.find("test.toml:"), std::string::npos) << temporal;

  const auto unknown = error_of(two_gnmt("name = \"scrooge\"\nplanner = \"tensil\""));
  EXPECT_NE(unknown.find("tensile"), std::string::npos) << unknown;  // did you mean

  sim_setup both;
  both.planning = job_planning{.planner = "capuchin", .budget = std::nullopt};
  const auto twice = error_of(two_gnmt("name = \"scrooge\"\nplanner = \"tensile\""), both);
  EXPECT_NE(twice.find("use one of them"), std::string::npos) << twice;

  sim_setup override_planner;
  override_planner.overrides.policy_planner = "tensile:bogus=1";
  const auto options = error_of(two_gnmt("name = \"scrooge\""), override_planner);
  EXPECT_NE(options.find("--policy-planner"), std::string::npos) << options;
  EXPECT_NE(options.find("bogus"), std::string::npos) << options;
}

}  // namespace
}  // namespace tandem::sim
