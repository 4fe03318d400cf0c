// Ctrl-C and SIGTERM to the library API's example (examples/api/custom_net.cpp), run as a user
// runs it: both trials stop at an iteration boundary, the table of what they measured is
// printed, and it exits with 130 or 143 (it once exited 130 with no output at all).

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "../cli/process.hpp"

namespace {

using namespace std::chrono_literals;
using tandem::cli::testing_support::process;

class ApiExample : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::path(::testing::TempDir()) /
              ("tandem-api-example-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  /// Starts a long run, sends `signal` once the trials have trained a while, and checks what a
  /// graceful stop leaves: the status, the notice and a table of stopped trials.
  void stops_gracefully(int signal, int expected_status) {
    process example({"scrooge", "256MiB", "1000000"}, folder_);
    ASSERT_TRUE(example.wait_for_stderr(
        [](const std::string& text) { return text.find("Ctrl-C stops them") != std::string::npos; },
        60s))
        << example.stderr_text();
    std::this_thread::sleep_for(1500ms);  // the trials join and train
    example.send(signal);
    const auto status = example.wait(120s);
    ASSERT_TRUE(status.has_value()) << "still running after the signal";
    EXPECT_EQ(*status, expected_status) << example.stderr_text();
    const auto table = example.stdout_text();
    EXPECT_NE(table.find("job "), std::string::npos) << table;
    for (const char* trial : {"trial-lr0.01", "trial-lr0.05"}) {
      EXPECT_TRUE(std::regex_search(table, std::regex(std::string(trial) + " +stopped +[1-9]")))
          << table;
    }
    const auto err = example.stderr_text();
    EXPECT_NE(err.find("stopping both trials at their next iteration"), std::string::npos) << err;
    EXPECT_EQ(err.find("terminate"), std::string::npos) << err;
  }

  std::filesystem::path folder_;
};

TEST_F(ApiExample, CtrlCStopsBothTrialsAtAnIterationAndPrintsWhatWasMeasured) {
  stops_gracefully(SIGINT, 130);
}

TEST_F(ApiExample, SigtermStopsThemTheSameWay) {
  stops_gracefully(SIGTERM, 143);
}

}  // namespace
