#pragma once
// Byte sizes: literals, human-readable formatting and parsing of sizes such as "64MiB" or "2.5G".

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem {

inline constexpr std::size_t KiB = std::size_t{1} << 10;
inline constexpr std::size_t MiB = std::size_t{1} << 20;
inline constexpr std::size_t GiB = std::size_t{1} << 30;

/// "1.50 GiB", "512 B": for reports and error messages.
std::string format_bytes(std::size_t bytes);

/// Parses "4096", "64MiB", "64M", "1.5GiB", "2g", "512KB" (K/M/G/T are powers of 1024).
/// Throws config_error naming the text and the accepted forms.
std::size_t parse_bytes(std::string_view text);

/// Rounds `value` up to a multiple of `alignment` (a power of two).
constexpr std::size_t align_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

constexpr bool is_power_of_two(std::size_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

}  // namespace tandem
