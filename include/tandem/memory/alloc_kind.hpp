#pragma once
// What an allocation holds. The pool keeps kinds apart so that they do not fragment each other
// (Zico §6.3): persistent data in persistent regions, small blocks in small-block regions, and
// the large per-iteration tensors (feature maps, gradients) in regions that flow between jobs.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tandem::memory {

enum class alloc_kind : std::uint8_t {
  unknown,      ///< Not classified (the default): treated as per-iteration data.
  persistent,   ///< Survives the iteration boundary: parameters, optimizer state, buffers.
  feature_map,  ///< Allocated before the iteration's peak, freed after it.
  gradient,     ///< Allocated after the peak (backward pass).
  temporary,    ///< Short-lived scratch space.
};

inline constexpr std::size_t alloc_kind_count = 5;
inline constexpr std::array<alloc_kind, alloc_kind_count> all_alloc_kinds{
    alloc_kind::unknown, alloc_kind::persistent, alloc_kind::feature_map, alloc_kind::gradient,
    alloc_kind::temporary};

constexpr std::size_t index_of(alloc_kind kind) {
  return static_cast<std::size_t>(kind);
}

constexpr std::string_view to_string(alloc_kind kind) {
  switch (kind) {
    case alloc_kind::unknown:
      return "unknown";
    case alloc_kind::persistent:
      return "persistent";
    case alloc_kind::feature_map:
      return "feature_map";
    case alloc_kind::gradient:
      return "gradient";
    case alloc_kind::temporary:
      return "temporary";
  }
  return "invalid";
}

constexpr std::optional<alloc_kind> parse_alloc_kind(std::string_view text) {
  for (auto kind : all_alloc_kinds) {
    if (to_string(kind) == text) return kind;
  }
  return std::nullopt;
}

}  // namespace tandem::memory
