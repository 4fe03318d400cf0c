// The README's policy table ("### Policies": `| name | what it does |` rows) against the
// registry: every registered policy has a row, every option of it is named there with its
// default as the registry prints it, and no row names a policy that is not registered.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tandem/schedule/registry.hpp"

namespace tandem::schedule {
namespace {

/// The rows of the README's policy table by policy name: the text of the row after the name.
std::map<std::string, std::string> readme_policy_rows() {
  std::ifstream file(TANDEM_SOURCE_DIR "/README.md");
  EXPECT_TRUE(file) << "cannot read " TANDEM_SOURCE_DIR "/README.md";
  std::map<std::string, std::string> rows;
  bool in_section = false;
  for (std::string line; std::getline(file, line);) {
    if (line.starts_with("#")) {
      in_section = line == "### Policies";
      continue;
    }
    // A row: | `name` | what it does |
    if (!in_section || !line.starts_with("| `")) continue;
    const auto name_end = line.find('`', 3);
    if (name_end == std::string::npos) continue;
    rows[line.substr(3, name_end - 3)] = line.substr(name_end + 1);
  }
  return rows;
}

TEST(Readme, EveryPolicyHasARowNamingItsOptionsWithTheirDefaults) {
  const auto rows = readme_policy_rows();
  ASSERT_FALSE(rows.empty()) << "no policy table under ### Policies";
  for (const auto& entry : policy_entries()) {
    const auto row = rows.find(entry.name);
    if (row == rows.end()) {
      ADD_FAILURE() << "README.md has no row for the policy '" << entry.name << "'";
      continue;
    }
    for (const auto& option : entry.options) {
      // Written as: `name` (DEFAULT... e.g. `ramp_start` (0.8: fraction ...)
      const std::string named = "`" + option.name + "` (" + option.default_text();
      const auto at = row->second.find(named);
      const bool whole_number =
          at != std::string::npos && at + named.size() < row->second.size() &&
          std::string("0123456789.").find(row->second[at + named.size()]) == std::string::npos;
      EXPECT_TRUE(whole_number) << "README.md's row for " << entry.name << " should name " << named
                                << "...: the option with its default";
    }
  }
}

TEST(Readme, EveryRowNamesARegisteredPolicy) {
  for (const auto& [name, text] : readme_policy_rows()) {
    EXPECT_NE(find_policy(name), nullptr)
        << "README.md has a row for '" << name << "', which is not a registered policy";
  }
}

TEST(Readme, EveryOptionTheReadmeNamesIsRegistered) {
  // An option left in the README after its removal (scrooge's poll) reads as one that works.
  for (const auto& [name, text] : readme_policy_rows()) {
    const auto* entry = find_policy(name);
    if (entry == nullptr) continue;
    const auto options = text.find("Options: ");
    if (options == std::string::npos) continue;
    std::istringstream listed(text.substr(options));
    std::string word;
    while (std::getline(listed, word, '`') && std::getline(listed, word, '`')) {
      // Every second piece between backquotes after "Options: " is an option's name.
      const auto known = policy_option_names(name);
      EXPECT_NE(std::find(known.begin(), known.end(), word), known.end())
          << "README.md's row for " << name << " names `" << word
          << "`, which is not one of its options";
    }
  }
}

}  // namespace
}  // namespace tandem::schedule
