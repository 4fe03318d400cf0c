#pragma once
// The options of a planner spec (NAME:KEY=VALUE,...; planner.hpp), read by the planner that
// takes them: each value is checked for its form and range, with a usage_error that names the
// planner, the option and what it takes.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "tandem/common/error.hpp"

namespace tandem::footprint::detail {

class option_reader {
 public:
  option_reader(std::string planner, std::map<std::string, std::string, std::less<>> values)
      : planner_(std::move(planner)), values_(std::move(values)) {}

  /// The whole number `key` gives, `fallback` when absent; usage_error outside [least, most].
  [[nodiscard]] std::int64_t whole(const std::string& key, std::int64_t fallback,
                                   std::int64_t least, std::int64_t most) const {
    const auto found = values_.find(key);
    if (found == values_.end()) return fallback;
    const auto& text = found->second;
    std::int64_t value = 0;
    const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
    TANDEM_EXPECTS(
        status == std::errc{} && end == text.data() + text.size() && value >= least &&
            value <= most,
        usage_error,
        refusal(key, text,
                "a whole number from " + std::to_string(least) + " to " + std::to_string(most)));
    return value;
  }

  /// The number `key` gives, `fallback` when absent; usage_error outside [least, most].
  [[nodiscard]] double real(const std::string& key, double fallback, double least,
                            double most) const {
    const auto found = values_.find(key);
    if (found == values_.end()) return fallback;
    const auto& text = found->second;
    double value = 0;
    const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
    std::ostringstream range;
    range << "a number from " << least << " to " << most;
    TANDEM_EXPECTS(status == std::errc{} && end == text.data() + text.size() &&
                       std::isfinite(value) && value >= least && value <= most,
                   usage_error, refusal(key, text, range.str()));
    return value;
  }

 private:
  [[nodiscard]] std::string refusal(const std::string& key, const std::string& text,
                                    const std::string& wanted) const {
    return "planner '" + planner_ + "': " + key + "=" + text + ": " + key + " takes " + wanted +
           " (e.g. " + planner_ + ":" + key + "=...)";
  }

  std::string planner_;
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace tandem::footprint::detail
