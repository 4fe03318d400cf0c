#include "tandem/common/error.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

TEST(Expects, ThrowsTheNamedTypeWithTheLocation) {
  try {
    TANDEM_EXPECTS(1 + 1 == 3, usage_error, "arithmetic is broken");
    FAIL() << "did not throw";
  } catch (const usage_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("arithmetic is broken"), std::string::npos);
    EXPECT_NE(what.find("tests/common/error_test.cpp:"), std::string::npos) << what;
  }
}

TEST(Expects, PassesWhenTheConditionHolds) {
  EXPECT_NO_THROW(TANDEM_EXPECTS(true, usage_error, "unused"));
}

TEST(AssertDeathTest, AbortsWithTheCondition) {
  EXPECT_DEATH(TANDEM_ASSERT(1 > 2, "ordering"), "ordering");
}

}  // namespace
}  // namespace tandem
