// tandem maxbatch: the search over batch sizes against a fake run (nothing trains or simulates),
// the refusals of bad input before any run, and the command itself on simulated runs.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "maxbatch_command.hpp"
#include "tandem/common/error.hpp"

namespace tandem::cli {
namespace {

/// Jobs that fit up to `largest_fitting` and run out of memory above; a model error at
/// `model_error_at`; batches from `refused_from` on cannot be run at all.
struct fake_jobs {
  explicit fake_jobs(std::int64_t largest) : largest_fitting(largest) {}

  std::int64_t largest_fitting;
  std::optional<std::int64_t> model_error_at;
  std::optional<std::int64_t> refused_from;
  std::vector<std::int64_t> tried;

  batch_probe probe() {
    return [this](std::int64_t batch) {
      tried.push_back(batch);
      if (refused_from && batch >= *refused_from) {
        return probe_result{probe_outcome::refused, "cannot be run: too large", 0};
      }
      if (batch == model_error_at) {
        return probe_result{probe_outcome::failed, "job x-1 failed: the model broke", 0};
      }
      if (batch > largest_fitting) {
        return probe_result{probe_outcome::out_of_memory, "job x-2 failed: out of memory", 0};
      }
      return probe_result{probe_outcome::fits, "fits", 10.0 * static_cast<double>(batch)};
    };
  }

  search_result search(const search_bounds& bounds) {
    std::ostringstream progress;
    return search_max_batch(probe(), bounds, progress);
  }
};

TEST(MaxBatch, DoublesUntilAFailureThenBisects) {
  fake_jobs jobs(100);
  std::ostringstream progress;
  const auto result = search_max_batch(jobs.probe(), {}, progress);
  EXPECT_EQ(result.max_batch, 100);
  EXPECT_FALSE(result.no_failure_found);
  EXPECT_TRUE(result.error.empty());
  EXPECT_DOUBLE_EQ(result.at_max.aggregate_samples_per_s, 1000.0);
  const std::vector<std::int64_t> doubling{1, 2, 4, 8, 16, 32, 64, 128};
  ASSERT_GT(jobs.tried.size(), doubling.size());
  EXPECT_TRUE(std::equal(doubling.begin(), doubling.end(), jobs.tried.begin()));
  for (auto bisected = jobs.tried.begin() + static_cast<std::ptrdiff_t>(doubling.size());
       bisected != jobs.tried.end(); ++bisected) {
    EXPECT_TRUE(*bisected > 64 && *bisected < 128) << *bisected;
  }
  EXPECT_NE(progress.str().find("batch 64: fits\n"), std::string::npos);
  EXPECT_NE(progress.str().find("batch 128: job x-2 failed: out of memory\n"), std::string::npos);
}

TEST(MaxBatch, FindsEveryBoundaryWithLogarithmicallyManyProbes) {
  for (const std::int64_t largest : {1, 2, 3, 5, 7, 64, 100, 1000, 4097, 40000, 65535}) {
    for (const std::int64_t low : {1, 3}) {
      fake_jobs jobs(largest);
      const auto result = jobs.search({.low = low, .high = {}, .expected_failure = {}});
      EXPECT_EQ(result.max_batch, largest < low ? 0 : largest) << "low " << low;
      // Doubling and bisection each take about log2 of the boundary.
      const auto bound = 2 * std::ceil(std::log2(static_cast<double>(largest) + 1)) + 2;
      EXPECT_LE(result.probes, static_cast<int>(bound)) << "largest " << largest << " low " << low;
      EXPECT_EQ(result.probes, static_cast<int>(jobs.tried.size()));
    }
  }
}

TEST(MaxBatch, NeverTriesBeyondHigh) {
  fake_jobs roomy(1000);
  const auto capped = roomy.search({.low = 1, .high = 300, .expected_failure = {}});
  EXPECT_EQ(capped.max_batch, 300);
  EXPECT_TRUE(capped.no_failure_found);
  for (const auto batch : roomy.tried) EXPECT_LE(batch, 300);

  fake_jobs tight(100);
  const auto found = tight.search({.low = 1, .high = 300, .expected_failure = {}});
  EXPECT_EQ(found.max_batch, 100);
  EXPECT_FALSE(found.no_failure_found);
}

TEST(MaxBatch, StopsDoublingAtTheLimitAndSaysSo) {
  fake_jobs jobs(doubling_limit * 4);
  std::ostringstream progress;
  const auto result =
      search_max_batch(jobs.probe(), {.low = 3, .high = {}, .expected_failure = {}}, progress);
  EXPECT_EQ(result.max_batch, doubling_limit);
  EXPECT_TRUE(result.no_failure_found);
  EXPECT_NE(progress.str().find("pass --high to go further"), std::string::npos);
}

TEST(MaxBatch, ReportsNoneFitsWhenTheLowBatchFails) {
  fake_jobs jobs(4);
  const auto result = jobs.search({.low = 8, .high = {}, .expected_failure = {}});
  EXPECT_EQ(result.max_batch, 0);
  EXPECT_EQ(result.probes, 1);
  EXPECT_TRUE(result.error.empty());
}

TEST(MaxBatch, StopsAtAFailureOtherThanMemory) {
  fake_jobs at_low(100);
  at_low.model_error_at = 1;
  const auto first = at_low.search({});
  EXPECT_EQ(first.probes, 1);
  EXPECT_EQ(first.max_batch, 0);
  EXPECT_EQ(first.error, "batch 1: job x-1 failed: the model broke");

  fake_jobs midway(100);
  midway.model_error_at = 8;
  const auto later = midway.search({});
  EXPECT_EQ(midway.tried.back(), 8);
  EXPECT_NE(later.error.find("batch 8:"), std::string::npos);
}

TEST(MaxBatch, EndsAtTheLastBatchThatRanWhenALargerOneCannotRun) {
  fake_jobs jobs(1000);
  jobs.refused_from = 100;
  const auto result = jobs.search({});
  EXPECT_EQ(result.max_batch, 64);
  EXPECT_TRUE(result.no_failure_found);
  EXPECT_TRUE(result.error.empty());
  EXPECT_EQ(jobs.tried.back(), 128);

  fake_jobs at_low(1000);
  at_low.refused_from = 1;
  EXPECT_EQ(at_low.search({}).error, "batch 1: cannot be run: too large");
}

TEST(MaxBatch, CapsTheDoublingAtTheExpectedFailureAndGoesOnWhenItFits) {
  fake_jobs below(50);
  EXPECT_EQ(below.search({.low = 1, .high = {}, .expected_failure = 51}).max_batch, 50);
  const std::vector<std::int64_t> capped{1, 2, 4, 8, 16, 32, 51};
  EXPECT_TRUE(std::equal(capped.begin(), capped.end(), below.tried.begin()));

  fake_jobs above(200);
  EXPECT_EQ(above.search({.low = 1, .high = {}, .expected_failure = 51}).max_batch, 200);
  EXPECT_NE(std::find(above.tried.begin(), above.tried.end(), 102), above.tried.end());
}

// --- the command --------------------------------------------------------------------------

maxbatch_command_options simulated(std::string policy) {
  maxbatch_command_options options;
  options.workload = TANDEM_CLI_TEST_DIR "/maxbatch_sim.toml";
  options.simulate = true;
  options.gpu = "v100";
  options.policy = std::move(policy);
  return options;
}

/// The config_error maxbatch_command throws for `options`, before anything runs.
std::string refusal(const maxbatch_command_options& options) {
  std::ostringstream out;
  std::ostringstream progress;
  try {
    static_cast<void>(maxbatch_command(options, out, progress));
  } catch (const config_error& e) {
    EXPECT_EQ(progress.str(), "") << "refused after running";
    return e.what();
  }
  ADD_FAILURE() << "not refused";
  return "";
}

TEST(MaxBatch, RefusesBadInputBeforeAnyRun) {
  auto options = simulated("temporal");
  options.settings = {"quantum=1"};
  EXPECT_NE(refusal(options).find("policy 'temporal' has no option 'quantum'; it takes none"),
            std::string::npos);

  options = simulated("scrooge");
  options.sweep = "ramp_strat=0.5,1";
  const auto misspelt = refusal(options);
  EXPECT_NE(misspelt.find("did you mean 'ramp_start'"), std::string::npos) << misspelt;
  EXPECT_NE(misspelt.find("its options: "), std::string::npos) << misspelt;

  options = simulated("scrooge");
  options.settings = {"ramp_start"};
  EXPECT_NE(refusal(options).find("write KEY=VALUE"), std::string::npos);
  options.settings = {"ramp_start=high"};
  EXPECT_NE(refusal(options).find("'high' is not a number"), std::string::npos);
  options.settings = {"ramp_iterations=1.5"};
  EXPECT_NE(refusal(options).find("--set/--sweep: scrooge: ramp_iterations must be a whole number"),
            std::string::npos);

  options = simulated("tempral");
  EXPECT_NE(refusal(options).find("unknown policy 'tempral'; did you mean 'temporal'?"),
            std::string::npos);

  options = simulated("temporal");
  options.jobs = 0;
  EXPECT_NE(refusal(options).find("--jobs 0"), std::string::npos);
  options = simulated("temporal");
  options.iterations = 0;
  EXPECT_NE(refusal(options).find("--iterations 0"), std::string::npos);
  options = simulated("temporal");
  options.jobs = 100000;
  EXPECT_NE(refusal(options).find("--jobs 100000: from 1 to 64 copies run side by side"),
            std::string::npos);
  options = simulated("temporal");
  options.iterations = 1001;
  EXPECT_NE(refusal(options).find("--iterations 1001: from 1 to 1000 per job and run"),
            std::string::npos);
  options = simulated("temporal");
  options.low = 100000;
  EXPECT_NE(refusal(options).find("--low 100000: the largest batch tandem runs is 65536"),
            std::string::npos);
  options = simulated("temporal");
  options.low = 64;
  options.high = 32;
  EXPECT_NE(refusal(options).find("--high 32 is below --low 64"), std::string::npos);
  options = simulated("temporal");
  options.gpu.reset();
  EXPECT_NE(refusal(options).find("--sim needs --gpu NAME"), std::string::npos);
}

TEST(MaxBatch, RefusesPlannerInputBeforeAnyRun) {
  auto options = simulated("exclusive");
  options.planner = "capuchn";
  EXPECT_NE(refusal(options).find("unknown planner 'capuchn'; did you mean 'capuchin'?"),
            std::string::npos);
  options = simulated("exclusive");
  options.plan_budget = "lots";  // asks for plans by the default planner: read as such
  EXPECT_NE(refusal(options).find("cannot read the plan budget 'lots'"), std::string::npos);
  options = simulated("exclusive");
  options.planner = "capuchin";
  options.plan_budget = "lots";
  EXPECT_NE(refusal(options).find("cannot read the plan budget 'lots'"), std::string::npos);
}

#if TANDEM_HAVE_TORCH
// Real runs: a planned job records its plan under the budget in passive mode, and a probe fits
// only when its plan held without passive swapping beside it.
TEST(MaxBatch, ARealPlannedJobFitsALargerBatchThanVanillaInTheSameBudget) {
  const auto search = [](std::optional<std::string> planner) {
    maxbatch_command_options options;
    options.workload = TANDEM_CLI_TEST_DIR "/maxbatch_real_planned.toml";
    options.policy = "exclusive";
    options.jobs = 1;
    options.iterations = 5;
    options.low = 32;
    options.high = 128;
    options.planner = std::move(planner);
    options.json_path = testing::TempDir() + "maxbatch_real_planned.json";
    std::ostringstream out;
    std::ostringstream progress;
    EXPECT_EQ(maxbatch_command(options, out, progress), 0) << progress.str();
    std::ifstream json_file(options.json_path);
    return std::make_pair(out.str() + progress.str(), nlohmann::json::parse(json_file));
  };
  const auto [plain_text, plain] = search(std::nullopt);
  const auto [planned_text, planned] = search("checkpoint");
  const auto vanilla_max = plain["solo"]["max_batch"].get<std::int64_t>();
  const auto planned_max = planned["solo"]["max_batch"].get<std::int64_t>();
  EXPECT_GE(vanilla_max, 32);
  EXPECT_LT(vanilla_max, 128) << plain_text;
  EXPECT_GE(planned_max, vanilla_max * 3 / 2) << plain_text << planned_text;
  EXPECT_NE(planned_text.find("each job planned by checkpoint for 80% of its share of the budget"),
            std::string::npos)
      << planned_text;
}
#endif

/// A planner that swaps and recomputes fits a larger batch alone than keeping every tensor does;
/// one job under exclusive is the solo search again, so it runs once.
TEST(MaxBatch, APlannerFitsALargerBatchInTheSameBudget) {
  const auto search = [](std::optional<std::string> planner) {
    auto options = simulated("exclusive");
    options.workload = TANDEM_CLI_TEST_DIR "/maxbatch_planned.toml";
    options.jobs = 1;
    options.planner = std::move(planner);
    options.json_path = testing::TempDir() + "maxbatch_planned.json";
    std::ostringstream out;
    std::ostringstream progress;
    EXPECT_EQ(maxbatch_command(options, out, progress), 0) << progress.str();
    EXPECT_NE(progress.str().find("co-located: 1 job under exclusive, the solo search again"),
              std::string::npos)
        << progress.str();
    std::ifstream json_file(options.json_path);
    return std::make_pair(out.str(), nlohmann::json::parse(json_file));
  };
  const auto [plain_text, plain] = search(std::nullopt);
  const auto [planned_text, planned] = search("capuchin");
  EXPECT_TRUE(plain["planner"].is_null());
  EXPECT_EQ(planned["planner"], "capuchin");
  EXPECT_NE(planned_text.find("each job planned by capuchin for its share of the budget"),
            std::string::npos)
      << planned_text;
  const auto vanilla_max = plain["solo"]["max_batch"].get<std::int64_t>();
  const auto planned_max = planned["solo"]["max_batch"].get<std::int64_t>();
  EXPECT_GT(vanilla_max, 64);
  EXPECT_GT(planned_max, vanilla_max * 5 / 4) << plain_text << planned_text;
  EXPECT_EQ(planned["colocated"][0]["max_batch"], planned["solo"]["max_batch"]);
}

// Issue 14: a --low past the solo maximum gets a message saying what to try, not "solo max 0".
TEST(MaxBatch, ALowBatchThatDoesNotFitAloneIsRefusedSayingWhatToTry) {
  auto options = simulated("spatial");
  options.low = 4096;
  std::ostringstream out;
  std::ostringstream progress;
  try {
    static_cast<void>(maxbatch_command(options, out, progress));
    ADD_FAILURE() << "a table for a solo maximum below --low: " << out.str();
  } catch (const config_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--low 4096: even the first batch tried did not fit with one job "
                           "alone"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("try a smaller --low (such as --low 512, or the default 1)"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(out.str(), "");
  EXPECT_NE(progress.str().find("batch 4096: job resnet-1 failed"), std::string::npos)
      << progress.str();
}

TEST(MaxBatch, SweepsAPolicyOptionWithOneRowPerValue) {
  auto options = simulated("scrooge");
  options.sweep = "ramp_start=0.5,1";
  std::ostringstream out;
  std::ostringstream progress;
  ASSERT_EQ(maxbatch_command(options, out, progress), 0) << progress.str();
  EXPECT_NE(out.str().find("scrooge     ramp_start=0.5"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("scrooge     ramp_start=1 "), std::string::npos) << out.str();
  // One solo search, then one per value.
  EXPECT_NE(progress.str().find("solo: 1 job under exclusive\n"), std::string::npos);
  EXPECT_EQ(progress.str().find("solo:", 1), std::string::npos);
}

/// Spatial sharing gives each job half the budget at their coinciding peaks: two copies fit at
/// about half the batch of one alone (a little less, since each holds its own weights).
TEST(MaxBatch, CommandLineHalvesTheSoloMaxUnderSpatialSharing) {
  const auto output = testing::TempDir() + "maxbatch_out.txt";
  const auto json_path = testing::TempDir() + "maxbatch.json";
  const auto command = std::string("'") + TANDEM_EXECUTABLE + "' maxbatch " +
                       TANDEM_CLI_TEST_DIR "/maxbatch_sim.toml --sim --gpu v100 --policy spatial " +
                       "--json '" + json_path + "' > '" + output + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream printed(output);
  const std::string text((std::istreambuf_iterator<char>(printed)), {});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("co-located max    ratio"), std::string::npos) << text;
  const auto row = text.find("\nspatial ");
  ASSERT_NE(row, std::string::npos) << text;
  EXPECT_NE(text.substr(row, text.find('\n', row + 1) - row).find('%'), std::string::npos) << text;

  std::ifstream json_file(json_path);
  const auto document = nlohmann::json::parse(json_file);
  const auto solo = document["solo"]["max_batch"].get<std::int64_t>();
  const auto colocated = document["colocated"][0]["max_batch"].get<std::int64_t>();
  EXPECT_GT(solo, 16);
  EXPECT_GT(colocated, 0);
  EXPECT_LE(colocated, solo / 2 + 2) << text;
  EXPECT_FALSE(document["colocated"][0]["ratio_percent"].is_null());
}

}  // namespace
}  // namespace tandem::cli
