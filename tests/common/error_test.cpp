#include "tandem/common/error.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

TEST(Expects, ThrowsTheNamedTypeWithTheLocationBesideTheMessage) {
  try {
    TANDEM_EXPECTS(1 + 1 == 3, usage_error, "arithmetic is broken");
    FAIL() << "did not throw";
  } catch (const usage_error& e) {
    // Users read what(): the problem, no source location (issue 14).
    EXPECT_EQ(std::string(e.what()), "arithmetic is broken");
    EXPECT_TRUE(e.location().starts_with("tests/common/error_test.cpp:")) << e.location();
  }
}

TEST(Fail, KeepsTheLocationThroughACopyAsTheBase) {
  try {
    TANDEM_FAIL(io_error, "disk full");
  } catch (const error& e) {
    const error copy = e;
    EXPECT_EQ(std::string(copy.what()), "disk full");
    EXPECT_FALSE(copy.location().empty());
  }
  EXPECT_TRUE(config_error("made by hand").location().empty());
}

TEST(Expects, PassesWhenTheConditionHolds) {
  EXPECT_NO_THROW(TANDEM_EXPECTS(true, usage_error, "unused"));
}

TEST(AssertDeathTest, AbortsWithTheCondition) {
  EXPECT_DEATH(TANDEM_ASSERT(1 > 2, "ordering"), "ordering");
}

}  // namespace
}  // namespace tandem
