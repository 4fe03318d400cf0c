#pragma once
// The timelines' CSV (`tandem run --timeline`, `tandem sim --timeline`): the one text field, a
// job's name, is quoted as RFC 4180 does when it holds a separator or a quote, and read back
// unquoted. Job names hold no line breaks (the workload reader refuses them), so a record is one
// line.

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// `text` as a CSV field: quoted, with its quotes doubled, when it holds a comma, a quote or a
/// line break; else as it is.
[[nodiscard]] inline std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    quoted += c;
    if (c == '"') quoted += '"';
  }
  return quoted + '"';
}

/// The fields of one CSV line, unquoted. A quote that does not open a field is kept as text, as
/// is an unclosed quoted field's rest; it never fails, so the caller judges the fields.
[[nodiscard]] inline std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        fields.back() += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace tandem
