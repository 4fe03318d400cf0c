#include "command_line.hpp"

#include <charconv>
#include <sstream>
#include <string_view>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"

namespace tandem::cli {

namespace {

/// Values are echoed in messages; a 300-digit one is shortened to its start and its length.
constexpr std::size_t longest_echo = 40;

std::string shorten(const std::string& text) {
  if (text.size() <= longest_echo) return text;
  return text.substr(0, longest_echo / 2) + "... (" + std::to_string(text.size()) + " characters)";
}

std::string shorten_words(const std::string& message) {
  std::string out;
  std::string word;
  std::istringstream words(message);
  while (words >> word) out += (out.empty() ? "" : " ") + shorten(word);
  return out;
}

std::string trim_number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace

std::string named_command(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument(argv[i]);
    if (!argument.starts_with('-')) return std::string(argument);
  }
  return {};
}

std::string unknown_command_message(const std::string& given,
                                    const std::vector<std::string>& commands) {
  if (given.empty()) return "give a command: " + join_names(commands);
  return "unknown command '" + shorten(given) + "'" + suggest_name(given, commands) +
         " (commands: " + join_names(commands) + ")";
}

std::string extras_message(const CLI::App& app, const CLI::App* command) {
  std::vector<std::string> extras = app.remaining();
  if (command != nullptr) {
    const auto own = command->remaining();
    extras.insert(extras.begin(), own.begin(), own.end());
  }
  if (extras.empty()) return {};
  const std::string where = command != nullptr ? " for `tandem " + command->get_name() + "`" : "";
  // An option first: a surplus argument after an unknown option is most likely its value.
  for (const auto& extra : extras) {
    if (!extra.starts_with('-') || extra == "-") continue;
    const auto name = extra.substr(0, extra.find('='));
    std::vector<std::string> known;
    for (const auto* owner : {command, &app}) {
      if (owner == nullptr) continue;
      for (const auto* option : owner->get_options()) {
        for (const auto& long_name : option->get_lnames()) known.push_back("--" + long_name);
      }
    }
    return "unknown option '" + shorten(name) + "'" + where + suggest_name(name, known);
  }
  return "unexpected argument '" + shorten(extras.front()) + "'" + where +
         (command != nullptr ? "; it takes one workload file" : "");
}

std::string parse_error_message(const CLI::ParseError& error) {
  std::string message = error.what();
  constexpr std::string_view unconverted = "Could not convert: ";
  if (message.starts_with(unconverted)) {
    // "Could not convert: --jobs = 1e400"
    const auto rest = message.substr(unconverted.size());
    const auto equals = rest.find(" = ");
    if (equals != std::string::npos) {
      return rest.substr(0, equals) + ": '" + shorten(rest.substr(equals + 3)) +
             "' is not a number it takes (a whole number, or one too large?)";
    }
  }
  return shorten_words(message);
}

CLI::Validator seconds_between(double low, double high) {
  const auto range = trim_number(low) + " to " + trim_number(high);
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, status] = std::from_chars(text.data(), end, value);
        if (status == std::errc{} && stop == end && value >= low && value <= high) return {};
        return "give a number of seconds from " + range + ", not '" + shorten(text) + "'";
      },
      "SECONDS in " + range);
}

CLI::Validator file_name() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        return text.empty() ? "give a file name, not an empty one" : std::string();
      },
      "");
}

CLI::Validator whole_number(std::int64_t low, std::int64_t high) {
  const bool bounded = low != std::numeric_limits<std::int64_t>::min() ||
                       high != std::numeric_limits<std::int64_t>::max();
  const auto range = std::to_string(low) + " to " + std::to_string(high);
  return CLI::Validator(
      [low, high, bounded, range](std::string& text) -> std::string {
        std::int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, status] = std::from_chars(text.data(), end, value);
        const auto expected = bounded ? "; give a whole number from " + range : std::string();
        if (status == std::errc::result_out_of_range) {
          return "'" + shorten(text) + "' is too large a number" + expected;
        }
        if (status != std::errc{} || stop != end) {
          return "'" + shorten(text) + "' is not a whole number" + expected;
        }
        if (value < low || value > high) {
          return "give a whole number from " + range + ", not " + text;
        }
        text = std::to_string(value);
        return {};
      },
      bounded ? "INTEGER in " + range : "INTEGER");
}

std::vector<std::string> comma_items(const std::vector<std::string>& values,
                                     const std::string& flag, const CLI::Validator& item) {
  std::vector<std::string> items;
  for (const auto& value : values) {
    std::size_t begin = 0;
    for (;;) {
      const auto end = value.find(',', begin);
      std::string text = value.substr(begin, end == std::string::npos ? end : end - begin);
      if (text.empty()) {
        throw config_error(flag + " '" + shorten(value) +
                           "' has an empty item (two commas together, or one at an end); "
                           "list items as a,b,c");
      }
      if (const auto why = item(text); !why.empty()) throw config_error(flag + ": " + why);
      items.push_back(std::move(text));
      if (end == std::string::npos) break;
      begin = end + 1;
    }
  }
  return items;
}

}  // namespace tandem::cli
