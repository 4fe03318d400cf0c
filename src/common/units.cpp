#include "tandem/common/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tandem/common/error.hpp"

namespace tandem {

std::string format_bytes(std::size_t bytes) {
  static constexpr std::array<const char*, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < units.size()) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%zu B", bytes);
  } else {
    std::snprintf(text, sizeof text, "%.2f %s", value, units[unit]);
  }
  return text;
}

std::size_t parse_bytes(std::string_view text) {
  auto bad = [&](const char* why) {
    TANDEM_FAIL(config_error, "cannot read the size '" + std::string(text) + "': " + why +
                                  "; write a byte count such as 4096, 64MiB, 512M or 1.5GiB");
  };
  std::size_t begin = 0;
  while (begin < text.size() && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  std::size_t end = begin;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
    ++end;
  }
  if (end == begin) bad("it does not start with a number");
  double number = 0;
  const std::string digits(text.substr(begin, end - begin));
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (ec != std::errc{} || ptr != digits.data() + digits.size()) bad("the number is malformed");

  std::string unit;
  for (std::size_t i = end; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!std::isspace(c)) unit += static_cast<char>(std::tolower(c));
  }
  if (unit.starts_with('%')) bad("a percentage is not a size here");
  if (unit.starts_with('e')) bad("exponents are not taken");
  double scale = 1;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else {
    const char prefix = unit[0];
    const std::string rest = unit.substr(1);
    if (rest != "" && rest != "b" && rest != "ib") bad("the unit is not one of B, K, M, G, T");
    switch (prefix) {
      case 'k':
        scale = static_cast<double>(KiB);
        break;
      case 'm':
        scale = static_cast<double>(MiB);
        break;
      case 'g':
        scale = static_cast<double>(GiB);
        break;
      case 't':
        scale = static_cast<double>(GiB) * 1024.0;
        break;
      default:
        bad("the unit is not one of B, K, M, G, T");
    }
  }
  const double bytes = number * scale;
  if (!std::isfinite(bytes) || bytes >= 1.8e19) bad("it is too large");
  if (bytes != std::floor(bytes)) bad("it is not a whole number of bytes");
  return static_cast<std::size_t>(bytes);
}

}  // namespace tandem
