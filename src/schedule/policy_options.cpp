#include "tandem/schedule/policy_options.hpp"

#include <cmath>
#include <sstream>
#include <string>

#include "tandem/common/error.hpp"

namespace tandem::schedule {

std::string format_option_number(double value) {
  std::ostringstream text;
  text.precision(15);  // 0.8 stays 0.8; a whole number up to 15 digits prints in full
  text << value;
  return text.str();
}

std::string option_spec::default_text() const {
  return format_option_number(default_value);
}

std::string option_spec::range_text() const {
  const std::string unit_text = unit.empty() ? "" : " " + unit;
  const std::string least_text = format_option_number(range.least);
  const bool bounded = std::isfinite(range.most);
  std::string text = whole ? "a whole number " : bounded ? "" : "a finite number ";
  if (range.above_least) {
    text += "above " + least_text;
    if (bounded) text += " and at most " + format_option_number(range.most);
  } else if (bounded) {
    text += "from " + least_text + " to " + format_option_number(range.most);
  } else {
    text += least_text + " or more";
  }
  return text + unit_text;
}

bool option_spec::allows(double value) const {
  // Written so that NaN fails every comparison and is refused.
  if (!std::isfinite(value)) return false;
  if (range.above_least ? !(value > range.least) : !(value >= range.least)) return false;
  if (!(value <= range.most)) return false;
  return !whole || value == std::floor(value);
}

void check_option(std::string_view policy, const option_spec& spec, double value) {
  TANDEM_EXPECTS(spec.allows(value), config_error,
                 std::string(policy) + ": " + spec.name + " must be " + spec.range_text() +
                     ", not " + format_option_number(value) + " (" + spec.name + ": " + spec.help +
                     ")");
}

}  // namespace tandem::schedule
