// The registry's typed options: each policy's option table parses into its options struct,
// documents the struct's own defaults, and refuses a bad value with words that name the policy,
// the option, the value and the range.

#include "tandem/schedule/policy_options.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/nodegroup.hpp"
#include "tandem/schedule/registry.hpp"
#include "tandem/schedule/scrooge.hpp"

namespace tandem::schedule {
namespace {

std::string refusal(const std::string& policy, const std::string& option, double value) {
  try {
    static_cast<void>(make_policy(policy, {1000, 2, {{option, value}}}));
  } catch (const config_error& e) {
    return e.what();
  }
  ADD_FAILURE() << policy << ": " << option << " = " << value << " was accepted";
  return "";
}

TEST(PolicyOptions, ParseIntoTheTypedStruct) {
  const auto scrooge = scrooge_options::table().parse(
      {{"ramp_start", 0.5}, {"ramp_iterations", 4}, {"fallback_threshold", 1}, {"other", 7}});
  EXPECT_EQ(scrooge.ramp_start, 0.5);
  EXPECT_EQ(scrooge.ramp_iterations, 4);
  EXPECT_EQ(scrooge.fallback_threshold, 1);
  const auto nodegroup = nodegroup_options::table().parse(
      {{"split_mib", 1.5}, {"groups_per_phase", 3}, {"streams", 4}, {"profile_iterations", 5}});
  EXPECT_EQ(nodegroup.split_bytes, 3 * MiB / 2) << "split_mib is given in MiB";
  EXPECT_EQ(nodegroup.groups_per_phase, 3u);
  EXPECT_EQ(nodegroup.streams, 4u);
  EXPECT_EQ(nodegroup.profile_iterations, 5);
}

TEST(PolicyOptions, LeftOutOptionsKeepTheStructsDefaultsWhichTheSpecsDocument) {
  const auto parsed = scrooge_options::table().parse({});
  const scrooge_options defaults;
  EXPECT_EQ(parsed.ramp_start, defaults.ramp_start);
  EXPECT_EQ(parsed.ramp_iterations, defaults.ramp_iterations);
  EXPECT_EQ(parsed.fallback_threshold, defaults.fallback_threshold);
  EXPECT_EQ(parsed.claim_margin, defaults.claim_margin);
  EXPECT_EQ(parsed.weigh_waiting, defaults.weigh_waiting);
  const auto& specs = scrooge_options::table().specs();
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].default_text(), "0.8");
  EXPECT_EQ(specs[1].default_text(), "10");
  EXPECT_TRUE(specs[1].whole);
  EXPECT_EQ(specs[2].default_text(), "0.25");
  EXPECT_EQ(specs[3].default_text(), "1");
  EXPECT_TRUE(specs[3].whole);
  EXPECT_EQ(specs[4].default_text(), "0");
  EXPECT_TRUE(specs[4].whole);
  const auto& nodegroup = nodegroup_options::table().specs();
  ASSERT_EQ(nodegroup.size(), 4u);
  EXPECT_EQ(nodegroup[0].default_text(), "0");
  EXPECT_EQ(nodegroup[0].unit, "MiB");
  EXPECT_EQ(nodegroup[1].default_text(), "4");
  EXPECT_EQ(nodegroup[2].default_text(), "2");
  EXPECT_EQ(nodegroup[3].default_text(), "2");
}

TEST(PolicyOptions, ABadValueIsRefusedNamingPolicyOptionValueAndRange) {
  EXPECT_NE(refusal("scrooge", "ramp_start", 2)
                .find("scrooge: ramp_start must be above 0 and at most 1, not 2"),
            std::string::npos);
  EXPECT_NE(refusal("scrooge", "ramp_start", 0).find("above 0 and at most 1, not 0"),
            std::string::npos)
      << "the lower bound itself is refused";
  EXPECT_NE(refusal("scrooge", "ramp_iterations", 2.5)
                .find("scrooge: ramp_iterations must be a whole number from 0 to 1000000000, "
                      "not 2.5"),
            std::string::npos);
  EXPECT_NE(refusal("scrooge", "fallback_threshold", 0)
                .find("scrooge: fallback_threshold must be a finite number above 0, not 0"),
            std::string::npos);
  EXPECT_NE(refusal("scrooge", "fallback_threshold", std::numeric_limits<double>::infinity())
                .find("not inf"),
            std::string::npos);
  EXPECT_NE(refusal("scrooge", "ramp_start", std::nan("")).find("not nan"), std::string::npos);
  EXPECT_NE(refusal("nodegroup", "split_mib", -1)
                .find("nodegroup: split_mib must be from 0 to 1048576 MiB, not -1"),
            std::string::npos);
  const auto streams = refusal("nodegroup", "streams", 0);
  EXPECT_NE(streams.find("nodegroup: streams must be a whole number from 1 to 1024, not 0"),
            std::string::npos)
      << streams;
  EXPECT_NE(streams.find("(streams: node groups that run at once"), std::string::npos)
      << "the help says what the option is for: " << streams;
}

TEST(PolicyOptions, TheBoundsThemselvesAreAllowed) {
  EXPECT_NO_THROW(static_cast<void>(make_policy("scrooge", {1000, 2, {{"ramp_start", 1}}})));
  EXPECT_NO_THROW(static_cast<void>(make_policy("scrooge", {1000, 2, {{"ramp_iterations", 0}}})));
  EXPECT_NO_THROW(static_cast<void>(make_policy("nodegroup", {1000, 2, {{"split_mib", 0}}})));
  EXPECT_NO_THROW(static_cast<void>(make_policy("nodegroup", {1000, 2, {{"streams", 1024}}})));
}

TEST(PolicyOptions, EveryEntryIsComplete) {
  for (const auto& entry : policy_entries()) {
    EXPECT_FALSE(entry.description.empty()) << entry.name;
    EXPECT_EQ(entry.description.find('\n'), std::string::npos) << entry.name << ": one line";
    ASSERT_TRUE(entry.make) << entry.name;
    EXPECT_EQ(entry.make({1000, 2, {}})->name(), entry.name);
    for (const auto& option : entry.options) {
      EXPECT_TRUE(option.allows(option.default_value))
          << entry.name << ": the default of " << option.name << " is outside its own range";
      EXPECT_FALSE(option.help.empty()) << entry.name << ": " << option.name;
    }
    EXPECT_EQ(find_policy(entry.name), &entry);
  }
  EXPECT_EQ(find_policy("lifo"), nullptr);
  EXPECT_TRUE(policy_option_names("lifo").empty());
}

}  // namespace
}  // namespace tandem::schedule
