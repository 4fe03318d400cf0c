#pragma once
// What the `tandem` command line tells a user about a line it cannot take: the unknown command
// or option named, with the closest known name, and values echoed in a readable length. Every
// such line exits with status 2 (main.cpp).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tandem::cli {

/// Exit status for input tandem cannot take: a bad command line, workload or option value.
inline constexpr int bad_input_status = 2;

/// The command named on the line: the first argument that is not an option (the global options
/// are flags, so none takes a value); empty when there is none.
[[nodiscard]] std::string named_command(int argc, const char* const* argv);

/// "unknown command 'rnu'; did you mean 'run'? (commands: ...)", or, for an empty `given`, the
/// list of commands to choose from.
[[nodiscard]] std::string unknown_command_message(const std::string& given,
                                                  const std::vector<std::string>& commands);

/// The first argument `app` set aside as unknown (allow_extras) while parsing `command` (the
/// subcommand parsed, or nullptr): an unknown option with the closest of the command's options,
/// or an argument too many. Empty when nothing was set aside.
[[nodiscard]] std::string extras_message(const CLI::App& app, const CLI::App* command);

/// A CLI11 parse error as a user should read it: long values shortened, CLI11's "Could not
/// convert" said plainly.
[[nodiscard]] std::string parse_error_message(const CLI::ParseError& error);

/// A validator that takes a number of seconds from `low` to `high` and names the range
/// otherwise (a 300-digit number, "inf" and "abc" alike).
[[nodiscard]] CLI::Validator seconds_between(double low, double high);

/// A validator for an option that names a file: an empty name (`--json ''`) is refused rather
/// than read as no file, which would write nothing without a word.
[[nodiscard]] CLI::Validator file_name();

/// A validator that takes a decimal whole number from `low` to `high` and names the range
/// otherwise; without a range, any that fits 64 bits (the command checks the range and says
/// why). CLI11 alone would clamp a 300-digit number to the type's largest value and read "010"
/// as octal; this one passes the number on in plain decimal.
[[nodiscard]] CLI::Validator whole_number(
    std::int64_t low = std::numeric_limits<std::int64_t>::min(),
    std::int64_t high = std::numeric_limits<std::int64_t>::max());

/// The items of a comma-separated option given once or more (`--compare a,b --compare c`), each
/// passed through `item` (a validator such as whole_number; none: taken as it is). CLI11's own
/// splitting drops an empty item ("a,,b", a trailing comma) without a word; this refuses it.
/// Throws config_error naming `flag` and what is wrong.
[[nodiscard]] std::vector<std::string> comma_items(const std::vector<std::string>& values,
                                                   const std::string& flag,
                                                   const CLI::Validator& item = CLI::Validator());

}  // namespace tandem::cli
