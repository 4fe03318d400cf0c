// Input files are read bounded: only regular files and pipes, never more than their cap, and
// every refusal says what the path is and what to do.

#include "tandem/runtime/input_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tandem/common/error.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/workload.hpp"
#include "tandem/runtime/workload_limits.hpp"

namespace tandem::runtime {
namespace {

namespace fs = std::filesystem;

const input_file_kind ten_bytes{"test file", 10, "check the path"};

std::string refusal(const fs::path& path, const input_file_kind& kind = ten_bytes) {
  try {
    static_cast<void>(read_input_file(path, kind));
  } catch (const config_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "read " << path;
  return "";
}

fs::path written(const std::string& name, const std::string& text) {
  const auto path = fs::path(testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path;
}

TEST(InputFile, ReadsARegularFileUpToItsCap) {
  EXPECT_EQ(read_input_file(written("ten.txt", "0123456789"), ten_bytes), "0123456789");
  EXPECT_EQ(read_input_file(written("empty.txt", ""), ten_bytes), "");
}

TEST(InputFile, RefusesAFileOverItsCapBeforeReadingIt) {
  const auto message = refusal(written("eleven.txt", "0123456789a"));
  EXPECT_NE(message.find("the test file '"), std::string::npos) << message;
  EXPECT_NE(message.find("eleven.txt' holds 11 B, more than the 10 B tandem reads from one; "
                         "check the path"),
            std::string::npos)
      << message;
}

TEST(InputFile, StopsReadingPastItsCapWhenTheSizeIsNotKnownBeforehand) {
  // /proc files say they are empty and hold more: only reading finds out.
  const auto message = refusal("/proc/self/maps");
  EXPECT_NE(message.find("holds more than the 10 B tandem reads from one"), std::string::npos)
      << message;
}

TEST(InputFile, RefusesWhatIsNotARegularFileSayingWhatItIs) {
  EXPECT_NE(refusal(testing::TempDir()).find("it is a directory; check the path"),
            std::string::npos);
  EXPECT_NE(refusal("/dev/zero").find("it is a character device (as /dev/zero is)"),
            std::string::npos);
  EXPECT_NE(refusal("/nonexistent/w.toml").find("cannot open the test file '/nonexistent/w.toml'"),
            std::string::npos);
}

// Process substitution (`tandem run <(...)`) hands over a pipe: it is read as a file is.
TEST(InputFile, ReadsAPipe) {
  const auto fifo = fs::path(testing::TempDir()) / "input_file_fifo";
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    std::ofstream out(fifo);
    out << "abc";
  });
  EXPECT_EQ(read_input_file(fifo, ten_bytes), "abc");
  writer.join();
  fs::remove(fifo);
}

TEST(InputFile, WorkloadsAndProfilesAreReadBounded) {
  const auto workload_message = [](const fs::path& path) {
    try {
      static_cast<void>(load_workload(path, workload_vocabulary{{}, {}}));
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(workload_message("/dev/zero").find("the workload file '/dev/zero': it is a character"),
            std::string::npos);
  EXPECT_NE(workload_message(testing::TempDir()).find("is a directory"), std::string::npos);
  // A sparse file one byte over the cap: refused from its size, nothing read.
  const auto huge = fs::path(testing::TempDir()) / "huge.toml";
  std::ofstream(huge).close();
  fs::resize_file(huge, max_workload_file_bytes + 1);
  EXPECT_NE(workload_message(huge).find("more than the 16.00 MiB tandem reads from one"),
            std::string::npos)
      << workload_message(huge);
  fs::remove(huge);
  try {
    static_cast<void>(load_profile("/dev/zero"));
    ADD_FAILURE() << "read /dev/zero as a profile";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("the profile file '/dev/zero': it is a character"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tandem::runtime
