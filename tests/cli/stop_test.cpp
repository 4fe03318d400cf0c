// Ctrl-C and SIGTERM to `tandem run` (issue 14): the first signal stops every job at its next
// iteration, prints what was done, writes whole files and exits 130 or 143; the second exits at
// once, leaving the files as they were.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "process.hpp"

namespace tandem::cli {
namespace {

using namespace std::chrono_literals;
using testing_support::process;
using testing_support::read_file;

class Stop : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::path(::testing::TempDir()) /
              ("tandem-stop-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_ / "out");
    json_ = folder_ / "out" / "results.json";
    timeline_ = folder_ / "out" / "timeline.csv";
    // A file from an earlier run: replaced whole, or left as it was, never emptied.
    std::ofstream(json_) << "{\"earlier\": true}\n";
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  [[nodiscard]] std::vector<std::string> run_line(const char* workload) const {
    return {"run",
            std::string(TANDEM_CLI_TEST_DIR) + "/" + workload,
            "--json",
            json_.string(),
            "--timeline",
            timeline_.string(),
            "--progress-interval",
            "0.05"};
  }

  /// True once a progress line shows `jobs` jobs past their first iteration.
  static bool trained(const std::string& progress, std::size_t jobs) {
    const std::regex done(R"(\w+: \w+ [1-9][0-9]*/[0-9]+ it)");
    std::istringstream lines(progress);
    for (std::string line; std::getline(lines, line);) {
      const auto found = std::distance(std::sregex_iterator(line.begin(), line.end(), done),
                                       std::sregex_iterator());
      if (static_cast<std::size_t>(found) >= jobs) return true;
    }
    return false;
  }

  /// Files in the output folder besides the results and the timeline: temporaries left behind.
  [[nodiscard]] std::size_t strays() const {
    std::size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder_ / "out")) {
      if (entry.path() != json_ && entry.path() != timeline_) ++count;
    }
    return count;
  }

  /// Runs long.toml, sends `signal` once both jobs have trained, and checks what a graceful
  /// stop leaves: the exit status, the table, the JSON and the timeline.
  void stops_gracefully(int signal, int expected_status) {
    process tandem(run_line("long.toml"), folder_);
    ASSERT_TRUE(tandem.wait_for_stderr([](const auto& text) { return trained(text, 2); }, 60s))
        << tandem.stderr_text();
    // While the run goes on, the earlier results stay whole.
    EXPECT_EQ(read_file(json_), "{\"earlier\": true}\n");
    tandem.send(signal);
    const auto status = tandem.wait(20s);
    ASSERT_TRUE(status.has_value()) << "still running 20 s after the signal";
    EXPECT_EQ(*status, expected_status) << tandem.stderr_text();

    const auto out = tandem.stdout_text();
    EXPECT_NE(out.find("first"), std::string::npos) << out;
    EXPECT_NE(std::regex_search(out, std::regex(R"(first +stopped +[1-9])")), false) << out;
    EXPECT_NE(out.find("2 stopped before the end"), std::string::npos) << out;
    EXPECT_NE(out.find("results: " + json_.string()), std::string::npos) << out;
    EXPECT_NE(tandem.stderr_text().find("stopping every job at its next iteration"),
              std::string::npos)
        << tandem.stderr_text();

    const auto document = nlohmann::json::parse(read_file(json_));
    EXPECT_TRUE(document["stopped"].get<bool>());
    for (const auto& job : document["jobs"]) {
      EXPECT_EQ(job["status"], "stopped") << job["name"];
      EXPECT_GT(job["iterations"].get<int>(), 0) << job["name"];
      EXPECT_EQ(job["iteration_log"].size(), job["iterations"].get<std::size_t>());
    }
    // The timeline is complete: every row has its ten fields and ends with a newline.
    const auto csv = read_file(timeline_);
    ASSERT_FALSE(csv.empty());
    EXPECT_EQ(csv.back(), '\n');
    std::istringstream rows(csv);
    std::size_t count = 0;
    for (std::string row; std::getline(rows, row); ++count) {
      EXPECT_EQ(std::count(row.begin(), row.end(), ','), 9) << "row " << count << ": " << row;
    }
    EXPECT_GT(count, 1u);
    EXPECT_EQ(strays(), 0u);
  }

  std::filesystem::path folder_;
  std::filesystem::path json_;
  std::filesystem::path timeline_;
};

TEST_F(Stop, SigintStopsTheJobsWritesWhatWasDoneAndExits130) {
  stops_gracefully(SIGINT, 130);
}

TEST_F(Stop, SigtermDoesTheSameAndExits143) {
  stops_gracefully(SIGTERM, 143);
}

TEST_F(Stop, ASecondSignalExitsAtOnceAndLeavesTheFilesAsTheyWere) {
  process tandem(run_line("slow.toml"), folder_);
  // The first iteration is done; the second takes seconds, so the stop must wait for it.
  ASSERT_TRUE(tandem.wait_for_stderr([](const auto& text) { return trained(text, 1); }, 60s))
      << tandem.stderr_text();
  tandem.send(SIGINT);
  ASSERT_TRUE(tandem.wait_for_stderr(
      [](const auto& text) { return text.find("send it again") != std::string::npos; }, 10s))
      << tandem.stderr_text();
  const auto second = std::chrono::steady_clock::now();
  tandem.send(SIGINT);
  const auto status = tandem.wait(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 130);
  EXPECT_LT(std::chrono::steady_clock::now() - second, 2s);
  EXPECT_NE(tandem.stderr_text().find("second signal: quitting at once"), std::string::npos)
      << tandem.stderr_text();
  // No table, no results claimed, the earlier file untouched, no temporaries, no timeline.
  EXPECT_EQ(tandem.stdout_text().find("results:"), std::string::npos) << tandem.stdout_text();
  EXPECT_EQ(read_file(json_), "{\"earlier\": true}\n");
  EXPECT_FALSE(std::filesystem::exists(timeline_));
  EXPECT_EQ(strays(), 0u);
}

TEST_F(Stop, ProfileWritesTheProfilesDoneAndMarksTheRestStopped) {
  const auto profiles = folder_ / "out" / "profiles.json";
  process tandem({"profile", std::string(TANDEM_CLI_TEST_DIR) + "/long.toml", "--iterations",
                  "1000000", "--out", profiles.string()},
                 folder_);
  ASSERT_TRUE(tandem.wait_for_stderr(
      [](const auto& text) { return text.find("profiling first") != std::string::npos; }, 60s));
  std::this_thread::sleep_for(3s);  // some iterations of the first job, even on a busy machine
  tandem.send(SIGINT);
  const auto status = tandem.wait(20s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 130) << tandem.stderr_text();
  const auto document = nlohmann::json::parse(read_file(profiles));
  ASSERT_EQ(document["jobs"].size(), 2u);
  EXPECT_EQ(document["jobs"][0]["status"], "stopped");
  EXPECT_GT(document["jobs"][0]["iteration_s"].size(), 0u);
  EXPECT_EQ(document["jobs"][1]["status"], "stopped");
  EXPECT_NE(tandem.stdout_text().find("first (mlp, batch 16): stopped after"), std::string::npos)
      << tandem.stdout_text();
}

TEST_F(Stop, MaxbatchEndsWithoutATableAndLeavesItsJsonAsItWas) {
  process tandem({"maxbatch", std::string(TANDEM_CLI_TEST_DIR) + "/tiny.toml", "--iterations", "3",
                  "--json", json_.string()},
                 folder_);
  ASSERT_TRUE(tandem.wait_for_stderr(
      [](const auto& text) { return text.find("batch 2: fits") != std::string::npos; }, 60s))
      << tandem.stderr_text();
  tandem.send(SIGINT);
  const auto status = tandem.wait(20s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 130) << tandem.stderr_text();
  EXPECT_NE(tandem.stderr_text().find("a search cut short has no answer"), std::string::npos)
      << tandem.stderr_text();
  EXPECT_EQ(tandem.stdout_text().find("results:"), std::string::npos);
  EXPECT_EQ(read_file(json_), "{\"earlier\": true}\n");
  EXPECT_EQ(strays(), 0u);
}

}  // namespace
}  // namespace tandem::cli
