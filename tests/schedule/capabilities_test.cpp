// Which optional capabilities each registered policy has: what drivers find once and rely on
// (a missing one falls back to the core's behaviour, an unexpected one would change a run).

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tandem/schedule/policy_capabilities.hpp"
#include "tandem/schedule/registry.hpp"

namespace tandem::schedule {
namespace {

/// The capabilities as letters: g(roups) p(artitions) r(easons) s(tatistics) P(rogress)
/// b(orrows).
std::string letters(const policy_capabilities& c) {
  std::string text;
  if (c.groups != nullptr) text += 'g';
  if (c.partitions != nullptr) text += 'p';
  if (c.reasons != nullptr) text += 'r';
  if (c.statistics != nullptr) text += 's';
  if (c.progress != nullptr) text += 'P';
  if (c.borrows != nullptr) text += 'b';
  return text;
}

TEST(Capabilities, EachPolicyHasExactlyItsOwn) {
  const std::map<std::string, std::string> expected{
      {"exclusive", ""}, {"temporal", ""}, {"spatial", ""}, {"fifo", ""},   {"static", "p"},
      {"scrooge", "sb"}, {"srtf", "rs"},   {"pack", "rs"},  {"fair", "rs"}, {"nodegroup", "gsP"}};
  for (const auto& name : policy_names()) {
    const auto made = make_policy(name, {1000, 2, {}});
    ASSERT_TRUE(expected.contains(name)) << name << " is registered but not listed here";
    EXPECT_EQ(letters(capabilities_of(*made)), expected.at(name)) << name;
  }
}

TEST(Capabilities, PointIntoThePolicyItself) {
  const auto made = make_policy("nodegroup", {1000, 2, {}});
  const auto found = capabilities_of(*made);
  ASSERT_NE(found.groups, nullptr);
  EXPECT_EQ(dynamic_cast<policy*>(found.groups), made.get());
  EXPECT_TRUE(found.groups->wants_memory_events()) << "the groups are cut from memory events";
}

}  // namespace
}  // namespace tandem::schedule
