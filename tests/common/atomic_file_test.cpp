// atomic_file: an output file appears whole or not at all, and every write error says why.

#include "tandem/common/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tandem/common/error.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

/// A fresh folder per test, removed afterwards.
class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("tandem-atomic-file-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(folder_, fs::perms::owner_all, ignored);
    fs::remove_all(folder_, ignored);
  }

  [[nodiscard]] fs::path at(const std::string& name) const { return folder_ / name; }

  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  /// Files in the folder: a temporary left behind shows up here.
  [[nodiscard]] std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(folder_), fs::directory_iterator()));
  }

  fs::path folder_;
};

TEST_F(AtomicFile, CommitPutsTheWholeFileInPlace) {
  const auto target = at("results.json");
  write(target, "old");
  {
    atomic_file file(target, "JSON results");
    EXPECT_TRUE(file.replaces_atomically());
    file.stream() << "new contents";
    file.stream().flush();
    // Until the commit, readers see the old file.
    EXPECT_EQ(read(target), "old");
    file.commit();
  }
  EXPECT_EQ(read(target), "new contents");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, CreatesAMissingFileWithTheUsualPermissions) {
  const auto target = at("new.csv");
  atomic_file file(target, "timeline");
  file.stream() << "a,b\n";
  file.commit();
  EXPECT_EQ(read(target), "a,b\n");
  // 0666 less the umask, as an ordinary file would get, not mkstemp's 0600.
  const auto mask = ::umask(0);
  ::umask(mask);
  struct stat made {};
  ASSERT_EQ(::stat(target.c_str(), &made), 0);
  EXPECT_EQ(made.st_mode & 0777, 0666 & ~mask);
}

TEST_F(AtomicFile, AbandonLeavesTheExistingFileIntactAndNoTemporary) {
  const auto target = at("results.json");
  write(target, "old");
  {
    atomic_file file(target, "JSON results");
    file.stream() << std::string(1 << 20, 'x');  // past the buffer: the temporary has data
    file.abandon();
  }
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(entries(), 1u);
  {
    atomic_file dropped(target, "JSON results");
    dropped.stream() << "never committed";
  }  // destroyed without commit: abandoned
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, RemoveUnfinishedFilesDeletesOnlyTemporaries) {
  const auto target = at("results.json");
  write(target, "old");
  atomic_file file(target, "JSON results");
  file.stream() << "half";
  file.stream().flush();
  EXPECT_EQ(entries(), 2u);
  remove_unfinished_files();  // what a signal handler calls before _exit
  EXPECT_EQ(entries(), 1u);
  EXPECT_EQ(read(target), "old");
}

TEST_F(AtomicFile, ADiskFullIsAnErrorWithItsReason) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  atomic_file file("/dev/full", "timeline");
  EXPECT_FALSE(file.replaces_atomically());  // a device is written in place
  file.stream() << "time_s,job\n";
  try {
    file.commit();
    FAIL() << "a write to /dev/full succeeded";
  } catch (const io_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("writing the timeline to '/dev/full' failed: No space left on device"),
              std::string::npos)
        << what;
  }
}

TEST_F(AtomicFile, DevNullTakesAnything) {
  atomic_file file("/dev/null", "JSON results");
  file.stream() << "discarded";
  EXPECT_NO_THROW(file.commit());
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(AtomicFile, AMissingFolderIsNamed) {
  try {
    atomic_file file(at("no/such/folder/out.json"), "JSON results");
    FAIL() << "opened a file in a missing folder";
  } catch (const io_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot write the JSON results file"), std::string::npos) << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  }
}

TEST_F(AtomicFile, AFolderAtThePathIsNamed) {
  fs::create_directories(at("out"));
  try {
    atomic_file file(at("out"), "JSON results");
    FAIL() << "opened a folder for writing";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("Is a directory"), std::string::npos) << e.what();
  }
}

TEST_F(AtomicFile, AnUnwritableFolderNamesTheCause) {
  // root may write anywhere: the cause cannot be provoked then.
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, every folder is writable";
  fs::create_directories(at("locked"));
  fs::permissions(at("locked"), fs::perms::owner_read | fs::perms::owner_exec);
  try {
    atomic_file file(at("locked/out.json"), "JSON results");
    FAIL() << "created a file in a read-only folder";
  } catch (const io_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Permission denied"), std::string::npos) << what;
    EXPECT_NE(what.find("may write to the folder"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tandem
