#include "tandem/common/names.hpp"

#include <algorithm>

namespace tandem {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string suggest_name(std::string_view text, const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  std::size_t best_distance = 3;  // farther than 2 edits is no suggestion
  for (const auto& name : known) {
    if (const auto d = edit_distance(text, name); d < best_distance) {
      best = &name;
      best_distance = d;
    }
  }
  return best != nullptr ? "; did you mean '" + *best + "'?" : "";
}

}  // namespace tandem
