// The command line as a user meets it: parse errors exit 2 and name what was wrong, with the
// closest name; no source locations; files that cannot be read or written say why (issue 14).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "process.hpp"

namespace tandem::cli {
namespace {

using testing_support::finished_run;

#if TANDEM_HAVE_TORCH
#define SKIP_WITHOUT_TORCH()
#else
#define SKIP_WITHOUT_TORCH() GTEST_SKIP() << "this build has no libtorch: `tandem run` cannot train"
#endif

class CommandLine : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::path(::testing::TempDir()) /
              ("tandem-cli-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  finished_run tandem(const std::vector<std::string>& arguments) const {
    return testing_support::run_tandem(arguments, folder_);
  }
  static std::string workload(const char* name) {
    return std::string(TANDEM_CLI_TEST_DIR) + "/" + name;
  }

  std::filesystem::path folder_;
};

TEST_F(CommandLine, EveryParseErrorExitsWith2) {
  // One of each kind CLI11 raises (each used to exit with its own code, 105 to 114).
  const std::vector<std::vector<std::string>> lines{
      {},                                                       // no command
      {"run"},                                                  // no workload
      {"sim", workload("tiny.toml"), "--seed", "x"},            // not a number
      {"profile", workload("tiny.toml"), "--iterations", "1"},  // out of range
      {"run", workload("tiny.toml"), workload("tiny.toml")},    // an argument too many
      {"sim", workload("tiny.toml"), "--json", ""},             // an empty file name
  };
  for (const auto& line : lines) {
    const auto run = tandem(line);
    std::string text;
    for (const auto& word : line) text += word + " ";
    EXPECT_EQ(run.status, 2) << text << "\n" << run.err;
    EXPECT_NE(run.err.find("tandem"), std::string::npos) << run.err;
  }
}

TEST_F(CommandLine, HelpAndVersionStillExitWith0) {
  for (const auto& line : {std::vector<std::string>{"--help"}, {"--version"}, {"run", "--help"}}) {
    const auto run = tandem(line);
    EXPECT_EQ(run.status, 0) << line.front() << "\n" << run.err;
    EXPECT_FALSE(run.out.empty());
  }
}

TEST_F(CommandLine, AnUnknownCommandIsNamedWithTheClosest) {
  const auto run = tandem({"rnu", workload("tiny.toml")});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("unknown command 'rnu'; did you mean 'run'?"), std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("A subcommand is required"), std::string::npos) << run.err;

  const auto nothing = tandem({});
  EXPECT_NE(nothing.err.find("give a command: "), std::string::npos) << nothing.err;
}

TEST_F(CommandLine, AMisspelledOptionGetsTheClosest) {
  SKIP_WITHOUT_TORCH();
  const auto run = tandem({"run", workload("tiny.toml"), "--jsn", "out.json"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("unknown option '--jsn' for `tandem run`; did you mean '--json'?"),
            std::string::npos)
      << run.err;
  const auto sim = tandem({"sim", workload("tiny.toml"), "--gpu", "v100", "--polcy=temporal"});
  EXPECT_EQ(sim.status, 2);
  EXPECT_NE(sim.err.find("unknown option '--polcy' for `tandem sim`; did you mean '--policy'?"),
            std::string::npos)
      << sim.err;
}

TEST_F(CommandLine, AHugeNumberIsRefusedPlainly) {
  SKIP_WITHOUT_TORCH();
  const std::string digits(300, '9');
  const auto interval = tandem({"run", workload("tiny.toml"), "--progress-interval", digits});
  EXPECT_EQ(interval.status, 2);
  EXPECT_NE(interval.err.find("--progress-interval: give a number of seconds from 0.01 to 86400"),
            std::string::npos)
      << interval.err;
  EXPECT_NE(interval.err.find("(300 characters)"), std::string::npos) << interval.err;

  const auto jobs = tandem({"maxbatch", workload("tiny.toml"), "--jobs", digits});
  EXPECT_EQ(jobs.status, 2);
  EXPECT_NE(
      jobs.err.find("--jobs: '99999999999999999999... (300 characters)' is too large a number"),
      std::string::npos)
      << jobs.err;
  EXPECT_EQ(jobs.err.find(digits), std::string::npos) << "the whole number echoed";
}

TEST_F(CommandLine, MessagesCarryNoSourceLocationUnlessDebugging) {
  const auto run = tandem({"pool-demo", "--budget", "12XB"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--budget: cannot read the size '12XB'"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(".cpp:"), std::string::npos) << run.err;
  const auto debug = tandem({"--debug", "pool-demo", "--budget", "12XB"});
  EXPECT_EQ(debug.status, 2);
  EXPECT_NE(debug.err.find("[src/common/units.cpp:"), std::string::npos) << debug.err;
}

TEST_F(CommandLine, AFolderAsWorkloadIsCalledAFolder) {
  SKIP_WITHOUT_TORCH();
  const auto run = tandem({"run", TANDEM_CLI_TEST_DIR});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("it is a directory"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("[device]"), std::string::npos) << run.err;
}

TEST_F(CommandLine, AMissingWorkloadSaysNoSuchFile) {
  const auto run = tandem({"sim", (folder_ / "none.toml").string(), "--gpu", "v100"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("No such file or directory"), std::string::npos) << run.err;
}

TEST_F(CommandLine, AnUnreadableWorkloadSaysPermissionDenied) {
  // As root every file is readable; read_input_file's own test checks the message then.
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, every file is readable";
  const auto path = folder_ / "locked.toml";
  std::filesystem::copy_file(workload("tiny.toml"), path);
  std::filesystem::permissions(path, std::filesystem::perms::none);
  const auto run = tandem({"sim", path.string(), "--gpu", "v100"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("Permission denied"), std::string::npos) << run.err;
}

TEST_F(CommandLine, AFullDiskIsAnErrorAndNoFileIsClaimed) {
  SKIP_WITHOUT_TORCH();
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const auto run = tandem({"run", workload("tiny.toml"), "--quiet", "--timeline", "/dev/full"});
  EXPECT_EQ(run.status, 2) << run.out << run.err;
  EXPECT_NE(run.err.find("writing the timeline to '/dev/full' failed: No space left on device"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out.find("memory timeline:"), std::string::npos) << run.out;

  const auto sim = tandem({"sim", workload("tiny.toml"), "--gpu", "v100", "--json", "/dev/full"});
  EXPECT_EQ(sim.status, 2) << sim.out << sim.err;
  EXPECT_NE(sim.err.find("No space left on device"), std::string::npos) << sim.err;
  EXPECT_EQ(sim.out.find("results:"), std::string::npos) << sim.out;
}

TEST_F(CommandLine, AnOutputInAMissingFolderNamesTheCause) {
  const auto run = tandem(
      {"sim", workload("tiny.toml"), "--gpu", "v100", "--json", "/nonexistent-dir/out.json"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("cannot write the JSON results file '/nonexistent-dir/out.json': No "
                         "such file or directory"),
            std::string::npos)
      << run.err;
}

TEST_F(CommandLine, AListWithAnEmptyItemIsRefusedNotShortened) {
  // CLI11 alone drops the empty item and runs the rest without a word.
  for (const auto& list :
       {std::vector<std::string>{"--compare", "scrooge,,temporal"}, {"--sweep-batch", "8,"}}) {
    auto line = std::vector<std::string>{"sim", workload("tiny.toml"), "--gpu", "v100"};
    line.insert(line.end(), list.begin(), list.end());
    const auto run = tandem(line);
    EXPECT_EQ(run.status, 2) << run.out << run.err;
    EXPECT_NE(run.err.find(list[0] + " '" + list[1] + "' has an empty item"), std::string::npos)
        << run.err;
  }
  const auto beyond =
      tandem({"sim", workload("tiny.toml"), "--gpu", "v100", "--sweep-batch", "8,70000"});
  EXPECT_EQ(beyond.status, 2);
  EXPECT_NE(beyond.err.find("--sweep-batch: give a whole number from 1 to 65536, not 70000"),
            std::string::npos)
      << beyond.err;
}

TEST_F(CommandLine, PolicyAndCompareTogetherAreRefused) {
  // --compare runs its own policies; a --policy beside it would be ignored without a word.
  const auto run = tandem(
      {"sim", workload("tiny.toml"), "--gpu", "v100", "--compare", "temporal", "--policy", "x"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--policy x and --compare both choose the policy"), std::string::npos)
      << run.err;
}

TEST_F(CommandLine, AFolderThatTakesNoFilesIsNotCalledMissing) {
  if (!std::filesystem::is_directory("/proc")) GTEST_SKIP() << "no /proc here";
  const auto run =
      tandem({"sim", workload("tiny.toml"), "--gpu", "v100", "--json", "/proc/out.json"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("the folder '/proc' exists but takes no new files"), std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace tandem::cli
