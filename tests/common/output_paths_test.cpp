// A command's outputs may name neither each other's file nor a file it reads, however spelt.

#include "tandem/common/output_paths.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tandem/common/error.hpp"

namespace tandem {
namespace {

std::string refusal(std::initializer_list<std::string_view> inputs,
                    std::initializer_list<output_path> outputs) {
  try {
    check_output_paths(inputs, outputs);
  } catch (const config_error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(OutputPaths, TwoOutputsInOneFileAreRefusedNamingBoth) {
  EXPECT_EQ(refusal({"w.toml"}, {{"--json", "r.json"}, {"--timeline", "./r.json"}}),
            "--timeline ./r.json is the file --json writes too: give each output its own file");
}

TEST(OutputPaths, AnOutputOverAnInputIsRefused) {
  const auto here = std::filesystem::current_path();
  EXPECT_EQ(refusal({"w.toml"}, {{"--json", (here / "w.toml").string()}}),
            "--json " + (here / "w.toml").string() +
                " would overwrite w.toml, which this command reads: write the output to another "
                "file");
  EXPECT_NE(refusal({"r.json", "t.csv"}, {{"--out", "sub/../t.csv"}}), "accepted");
}

TEST(OutputPaths, DistinctFilesAndUnsetOutputsPass) {
  EXPECT_EQ(
      refusal({"w.toml", ""}, {{"--json", "r.json"}, {"--timeline", ""}, {"--report", "r.html"}}),
      "accepted");
}

TEST(OutputPaths, ALinkIsTheFileItPointsTo) {
  const auto dir = std::filesystem::temp_directory_path() / "tandem-output-paths-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto target = dir / "w.toml";
  { std::ofstream(target) << "x"; }
  std::filesystem::create_symlink(target, dir / "link.toml");
  EXPECT_NE(refusal({target.string()}, {{"--json", (dir / "link.toml").string()}}), "accepted");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tandem
