#include "tandem/common/units.hpp"

#include <gtest/gtest.h>

#include "tandem/common/error.hpp"

namespace tandem {
namespace {

TEST(ParseBytes, AcceptsPlainCountsAndBinaryUnits) {
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("64MiB"), 64 * MiB);
  EXPECT_EQ(parse_bytes("64M"), 64 * MiB);
  EXPECT_EQ(parse_bytes("64 mb"), 64 * MiB);
  EXPECT_EQ(parse_bytes("1.5GiB"), GiB + GiB / 2);
  EXPECT_EQ(parse_bytes("2g"), 2 * GiB);
  EXPECT_EQ(parse_bytes("512KB"), 512 * KiB);
  EXPECT_EQ(parse_bytes("1T"), 1024 * GiB);
}

TEST(ParseBytes, RejectsMalformedTextWithAHint) {
  for (const char* text : {"", "MiB", "12XB", "1.2.3M", "0.3B", "-5M", "99999999999999999999T"}) {
    try {
      parse_bytes(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const config_error& e) {
      EXPECT_NE(std::string(e.what()).find("64MiB"), std::string::npos) << e.what();
    }
  }
}

TEST(ParseBytes, SaysWhatAPercentageOrAnExponentIs) {
  const auto message = [](const char* text) {
    try {
      parse_bytes(text);
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("150%").find("a percentage is not a size here"), std::string::npos);
  EXPECT_NE(message("1e30GiB").find("exponents are not taken"), std::string::npos);
}

TEST(FormatBytes, PicksTheLargestUnitBelowTheValue) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64 * MiB), "64.00 MiB");
  EXPECT_EQ(format_bytes(GiB + GiB / 2), "1.50 GiB");
}

TEST(AlignUp, RoundsToPowersOfTwo) {
  EXPECT_EQ(align_up(1, 512), 512u);
  EXPECT_EQ(align_up(512, 512), 512u);
  EXPECT_EQ(align_up(513, 512), 1024u);
  EXPECT_TRUE(is_power_of_two(2 * MiB));
  EXPECT_FALSE(is_power_of_two(3 * MiB));
  EXPECT_FALSE(is_power_of_two(0));
}

}  // namespace
}  // namespace tandem
