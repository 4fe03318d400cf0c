// tandem profile's core: each job trained alone with its last iteration recorded in detail, and
// the JSON that carries it.

#include "tandem/runtime/profile.hpp"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tandem/common/error.hpp"
#include "tandem/runtime/session.hpp"

namespace tandem::runtime {
namespace {

workload two_mlps() {
  const std::string text =
      "[device]\nkind = \"cpu\"\ncapacity = \"512MiB\"\nbudget = \"128MiB\"\n"
      "region_size = \"2MiB\"\n[policy]\nname = \"spatial\"\n"
      "[[job]]\nname = \"a\"\nmodel = \"mlp\"\nbatch_size = 16\niterations = 50\n"
      "[job.model_options]\nimage_side = 16\n"
      "[[job]]\nname = \"b\"\nmodel = \"mlp\"\nbatch_size = 32\nduration = \"30s\"\n"
      "arrival = \"5s\"\n[job.model_options]\nimage_side = 16\nhidden = 64\n";
  return parse_workload(text, "two.toml", training_vocabulary());
}

TEST(Profile, EachJobAloneForTheIterationsAskedWithItsLastIterationInDetail) {
  const auto profiles = profile_workload(two_mlps(), 3);
  ASSERT_EQ(profiles.jobs.size(), 2u);
  EXPECT_EQ(profiles.region_size, 2u << 20);
  for (const auto& job : profiles.jobs) {
    ASSERT_TRUE(job.completed) << job.name << ": " << job.error;
    EXPECT_EQ(job.iteration_s.size(), 3u);  // not the workload's 50 iterations or 30 s
    EXPECT_GT(job.persistent_bytes, 0u);
    EXPECT_GT(job.peak_live_bytes, job.persistent_bytes);
    ASSERT_TRUE(job.last_iteration.has_value());
    const auto& steps = job.last_iteration->allocations;
    ASSERT_FALSE(steps.empty());
    // Times are relative to the iteration's start, in order; an iteration frees what it makes.
    std::int64_t balance = 0;
    std::int64_t most = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      EXPECT_GE(steps[i].at_s, 0.0);
      if (i > 0) {
        EXPECT_GE(steps[i].at_s, steps[i - 1].at_s);
      }
      balance += steps[i].delta_bytes;
      most = std::max(most, balance);
    }
    EXPECT_EQ(balance, 0) << job.name;
    EXPECT_GT(most, 0);
    EXPECT_GE(job.last_iteration->held.duration_s, 0.0);
  }
  EXPECT_EQ(profiles.jobs[1].batch_size, 32);
}

TEST(Profile, TheJsonCarriesEveryField) {
  const auto profiles = profile_workload(two_mlps(), 2);
  std::ostringstream out;
  write_profile_json(profiles, out);
  const auto document = nlohmann::json::parse(out.str());
  EXPECT_EQ(document["schema_version"], profile_schema_version);
  EXPECT_EQ(document["workload"], "two.toml");
  ASSERT_EQ(document["jobs"].size(), 2u);
  const auto& job = document["jobs"][0];
  EXPECT_EQ(job["name"], "a");
  EXPECT_EQ(job["status"], "completed");
  EXPECT_EQ(job["iteration_s"].size(), 2u);
  const auto& allocations = job["last_iteration"]["allocations"];
  ASSERT_EQ(allocations.size(), profiles.jobs[0].last_iteration->allocations.size());
  EXPECT_EQ(allocations[0].size(), 3u);  // [time_s, delta_bytes, kind]
  EXPECT_TRUE(allocations[0][2].is_string());
  EXPECT_TRUE(job["last_iteration"]["held"].contains("steps"));
}

TEST(Profile, FewerThanTwoIterationsIsRefused) {
  EXPECT_THROW((void)profile_workload(two_mlps(), 1), config_error);
}

}  // namespace
}  // namespace tandem::runtime
