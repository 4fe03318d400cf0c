// `tandem plan` end to end (issue 16): every training job's sequence recorded or taken from a
// profile, planned and priced; the table, the JSON (whole or not at all), bad input exiting 2
// with what to do, and Ctrl-C while recording.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "process.hpp"

namespace tandem::cli {
namespace {

using namespace std::chrono_literals;
using testing_support::finished_run;
using testing_support::process;
using testing_support::read_file;

class PlanCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::path(::testing::TempDir()) /
              ("tandem-plan-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_ / "out");
    json_ = folder_ / "out" / "plans.json";
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  finished_run tandem(const std::vector<std::string>& arguments) const {
    return testing_support::run_tandem(arguments, folder_);
  }
  static std::string workload(const char* name) {
    return std::string(TANDEM_CLI_TEST_DIR) + "/" + name;
  }
  /// Exit status 2 and `message` on stderr, nothing on stdout.
  void expect_refused(const std::vector<std::string>& arguments, const std::string& message) {
    const auto run = tandem(arguments);
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
    EXPECT_EQ(run.out, "");
  }

  std::filesystem::path folder_;
  std::filesystem::path json_;
};

TEST_F(PlanCommand, PlansEveryTrainingJobAndWritesTheMeasuresAndPlans) {
  const auto run = tandem({"plan", workload("tiny_plan.toml"), "--json", json_.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  // Recorded: each training job profiled alone; the inference job has nothing to plan.
  EXPECT_NE(run.err.find("profiling first (resnet20)"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("profiling serve"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("2 training jobs, swaps priced at "), std::string::npos) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"(job +model +planner +batch +vanilla peak)")))
      << run.out;
  EXPECT_TRUE(std::regex_search(
      run.out, std::regex(R"(first +resnet20 +capuchin +8 +[0-9.]+ [KM]iB +[0-9.]+ [KM]iB )")))
      << run.out;
  EXPECT_TRUE(std::regex_search(
      run.out, std::regex(R"(second +mlp +checkpoint +16 +[0-9.]+ [KM]iB +planner's )")))
      << run.out;
  EXPECT_NE(run.out.find("plans: " + json_.string()), std::string::npos) << run.out;

  const auto document = nlohmann::json::parse(read_file(json_));
  EXPECT_EQ(document["schema_version"], 1);
  EXPECT_GT(document["copy_bandwidth"].get<double>(), 0.0);
  ASSERT_EQ(document["jobs"].size(), 2u);
  const auto& first = document["jobs"][0];
  EXPECT_EQ(first["name"], "first");
  EXPECT_EQ(first["planner"], "capuchin");
  EXPECT_EQ(first["sequence_source"], "recorded");
  const auto& measures = first["measures"];
  const auto vanilla = measures["vanilla_peak_bytes"].get<double>();
  EXPECT_EQ(first["budget_bytes"].get<std::size_t>(),
            static_cast<std::size_t>(0.8 * vanilla));  // 80% of the vanilla peak
  EXPECT_LE(measures["planned_peak_bytes"].get<double>(), vanilla);
  // The plan itself, as footprint::write_plan_json writes it.
  EXPECT_EQ(first["plan"]["planner"], "capuchin");
  EXPECT_EQ(first["plan"]["budget_bytes"], first["budget_bytes"]);
  EXPECT_TRUE(first["plan"]["decisions"].is_array());
  const auto& second = document["jobs"][1];
  EXPECT_EQ(second["planner"], "checkpoint");
  EXPECT_TRUE(second["budget"].is_null());
  EXPECT_EQ(second["budget_bytes"], 0);
}

TEST_F(PlanCommand, TheCommandLinesPlannerAndBudgetReplaceTheJobs) {
  const auto run = tandem({"plan", workload("tiny_plan.toml"), "--planner", "vdnn-all", "--budget",
                           "64MiB", "--json", json_.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto document = nlohmann::json::parse(read_file(json_));
  for (const auto& job : document["jobs"]) {
    EXPECT_EQ(job["planner"], "vdnn-all");
    EXPECT_EQ(job["budget_bytes"], 64u << 20);
  }
}

// Planning asked for without a planner's name (here, no planner anywhere) takes the default one.
TEST_F(PlanCommand, AJobThatNamesNoPlannerIsPlannedByTheDefaultOne) {
  const auto run = tandem({"plan", workload("tiny.toml"), "--json", json_.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto document = nlohmann::json::parse(read_file(json_));
  ASSERT_FALSE(document["jobs"].empty());
  for (const auto& job : document["jobs"]) EXPECT_EQ(job["planner"], "tandem");
  const auto alias = tandem({"plan", workload("tiny.toml"), "--planner", "default:time_limit=0.5",
                             "--json", json_.string()});
  ASSERT_EQ(alias.status, 0) << alias.err;
}

TEST_F(PlanCommand, TakesTheSequencesOfAProfileInsteadOfRecording) {
  const auto profiles = (folder_ / "profiles.json").string();
  ASSERT_EQ(
      tandem({"profile", workload("tiny.toml"), "--iterations", "2", "--out", profiles}).status, 0);
  const auto run = tandem({"plan", workload("tiny.toml"), "--planner", "superneurons", "--profile",
                           profiles, "--json", json_.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err.find("profiling"), std::string::npos) << run.err;  // nothing recorded
  const auto document = nlohmann::json::parse(read_file(json_));
  ASSERT_EQ(document["jobs"].size(), 2u);
  for (const auto& job : document["jobs"]) {
    EXPECT_EQ(job["sequence_source"], "profile " + profiles);
  }
}

TEST_F(PlanCommand, BadInputExitsWith2SayingWhatToDo) {
  const auto tiny = workload("tiny.toml");
  expect_refused({"plan", tiny, "--planner", "capuchn"},
                 "--planner: unknown planner 'capuchn'; did you mean 'capuchin'?");
  expect_refused({"plan", tiny, "--planner", "none", "--budget", "150%"},
                 "--budget: the plan budget '150%' must be above 0% and at most 100%");
  expect_refused({"plan", tiny, "--planner", "none", "--budget", "lots"},
                 "--budget: cannot read the plan budget 'lots'");
  expect_refused({"plan", tiny, "--planner", "none", "--profile", "no_such_profile.json"},
                 "no_such_profile.json");
  expect_refused({"plan", tiny, "--planner", "none", "--json", "/nonexistent-dir/plans.json"},
                 "/nonexistent-dir/plans.json");
  expect_refused({"plan", workload("no_such.toml"), "--planner", "none"}, "no_such.toml");
}

TEST_F(PlanCommand, AJobWhoseVanillaIterationDoesNotFitTheDeviceBudgetSaysWhichBudgetToRaise) {
  // --budget is the plan's: the pool's usual advice to raise it would not help the recording.
  const auto tight = folder_ / "tight.toml";
  std::ofstream(tight) << "[device]\nkind = \"cpu\"\ncapacity = \"512MiB\"\nbudget = \"4MiB\"\n"
                          "region_size = \"2MiB\"\n\n[policy]\nname = \"exclusive\"\n\n"
                          "[[job]]\nname = \"big\"\nmodel = \"resnet20\"\nbatch_size = 32\n"
                          "iterations = 5\n[job.model_options]\nimage_side = 16\n";
  const auto run = tandem({"plan", tight.string(), "--planner", "capuchin", "--budget", "50%"});
  EXPECT_EQ(run.status, 3) << run.err;  // the job failed; nothing was wrong with the input
  EXPECT_NE(run.out.find("out of memory"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("must fit the workload's [device] budget (4.00 MiB); --budget is the "
                         "plan's"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("raise the budget (--budget)"), std::string::npos) << run.out;
}

TEST_F(PlanCommand, CtrlCWhileRecordingMakesNoPlansAndLeavesTheJsonAsItWas) {
  std::ofstream(json_) << "{\"earlier\": true}\n";
  process tandem(
      {"plan", workload("plan_slow.toml"), "--planner", "capuchin", "--json", json_.string()},
      folder_);
  ASSERT_TRUE(tandem.wait_for_stderr(
      [](const auto& text) { return text.find("profiling a ") != std::string::npos; }, 60s))
      << tandem.stderr_text();
  tandem.send(SIGINT);
  const auto status = tandem.wait(60s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 130) << tandem.stderr_text();
  EXPECT_NE(tandem.stderr_text().find("stopped while recording; no plans written"),
            std::string::npos)
      << tandem.stderr_text();
  EXPECT_EQ(tandem.stdout_text().find("plans:"), std::string::npos) << tandem.stdout_text();
  EXPECT_EQ(read_file(json_), "{\"earlier\": true}\n");
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder_ / "out")) {
    static_cast<void>(entry);
    ++files;
  }
  EXPECT_EQ(files, 1u);  // no temporary left behind
}

}  // namespace
}  // namespace tandem::cli
