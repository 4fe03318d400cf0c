#pragma once
// Helpers for messages about names a user wrote: listing the known ones and suggesting the
// closest ("did you mean ...?").

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// "a, b, c".
[[nodiscard]] std::string join_names(const std::vector<std::string>& names);

/// "; did you mean 'x'?" when a known name is within two edits of `text`, else "".
[[nodiscard]] std::string suggest_name(std::string_view text,
                                       const std::vector<std::string>& known);

}  // namespace tandem
