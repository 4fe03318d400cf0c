#include "tandem/runtime/footprint_budget.hpp"

#include <cmath>
#include <cstdint>
#include <sstream>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::runtime {

namespace {

const char* const accepted =
    "write a share of the job's vanilla peak such as \"75%\" (above 0, at most 100%) or a size "
    "such as \"1GiB\"";

}  // namespace

std::size_t footprint_budget::bytes_for(std::size_t vanilla_peak_bytes) const {
  if (bytes != 0) return bytes;
  return static_cast<std::size_t>(
      std::floor(percent / 100 * static_cast<double>(vanilla_peak_bytes)));
}

std::string footprint_budget::describe() const {
  if (bytes != 0) return format_bytes(bytes);
  std::ostringstream text;
  text << percent << "% of the vanilla peak";
  return text.str();
}

footprint_budget parse_footprint_budget(std::string_view text) {
  const std::string shown(text);
  if (!text.empty() && text.back() == '%') {
    double percent = 0;
    std::istringstream number(shown.substr(0, shown.size() - 1));
    if (!(number >> percent) || !number.eof() || !std::isfinite(percent)) {
      TANDEM_FAIL(config_error, "cannot read the plan budget '" + shown + "'; " + accepted);
    }
    if (!(percent > 0 && percent <= 100)) {
      TANDEM_FAIL(config_error, "the plan budget '" + shown +
                                    "' must be above 0% and at most 100% of the job's vanilla "
                                    "peak (a plan cannot need more than keeping everything)");
    }
    return {.percent = percent, .bytes = 0};
  }
  std::size_t bytes = 0;
  try {
    bytes = parse_bytes(text);
  } catch (const config_error&) {
    TANDEM_FAIL(config_error, "cannot read the plan budget '" + shown + "'; " + accepted);
  }
  if (bytes == 0) {
    TANDEM_FAIL(config_error, "the plan budget '" + shown + "' must be above 0; " + accepted);
  }
  return {.percent = 0, .bytes = bytes};
}

footprint_budget footprint_budget_of_bytes(std::int64_t bytes) {
  if (bytes <= 0) {
    TANDEM_FAIL(config_error,
                "the plan budget " + std::to_string(bytes) + " must be above 0 bytes; " + accepted);
  }
  return {.percent = 0, .bytes = static_cast<std::size_t>(bytes)};
}

}  // namespace tandem::runtime
