#pragma once
// Reading tandem's JSON documents (profiles, access sequences, plans): a value of the document
// with its path (`tensors[3].read_by[1]`), so that every complaint names the field, says what it
// should hold and what to do (the `remedy` each kind of document passes). Header-only: a user
// links nlohmann_json itself.

#include <cmath>
#include <cstdint>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/common/error.hpp"

namespace tandem {

struct document_context {
  std::string source;  ///< the input's name: a path, "-"
  std::string remedy;  ///< what the user should do about a malformed document
};

class json_field {
 public:
  json_field(const nlohmann::json& value, std::string path, const document_context& context)
      : value_(value), path_(std::move(path)), context_(context) {}

  [[nodiscard]] const nlohmann::json& json() const { return value_; }
  [[nodiscard]] const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& problem) const {
    TANDEM_FAIL(config_error, context_.source + ": " + (path_.empty() ? "the document" : path_) +
                                  ": " + problem + "; " + context_.remedy);
  }
  [[noreturn]] void expected(const std::string& what) const {
    auto shown = value_.dump();
    if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
    fail("expected " + what + ", got " + shown);
  }

  /// The member `key` of this object; missing is an error.
  [[nodiscard]] json_field operator[](const char* key) const {
    if (!value_.is_object()) expected("an object");
    const auto found = value_.find(key);
    const auto member_path = path_.empty() ? std::string(key) : path_ + "." + key;
    if (found == value_.end()) json_field(value_, member_path, context_).fail("missing");
    return {*found, member_path, context_};
  }

  /// The elements of this array (of exactly `count` elements when given, with `shape` saying
  /// what they are).
  [[nodiscard]] std::vector<json_field> elements(const std::string& shape = "an array",
                                                 std::size_t count = 0) const {
    if (!value_.is_array() || (count != 0 && value_.size() != count)) expected(shape);
    std::vector<json_field> out;
    out.reserve(value_.size());
    for (std::size_t i = 0; i < value_.size(); ++i)
      out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]", context_);
    return out;
  }

  [[nodiscard]] std::string text() const {
    if (!value_.is_string()) expected("a string");
    return value_.get<std::string>();
  }
  [[nodiscard]] bool flag() const {
    if (!value_.is_boolean()) expected("true or false");
    return value_.get<bool>();
  }
  [[nodiscard]] double seconds() const {
    if (!value_.is_number() || !std::isfinite(value_.get<double>()) || value_.get<double>() < 0)
      expected("a number of seconds >= 0");
    return value_.get<double>();
  }
  /// A whole number >= 0 that fits `T`.
  template <typename T>
  [[nodiscard]] T count(const std::string& what = "a whole number >= 0") const {
    if (!value_.is_number_unsigned() ||
        value_.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<T>::max()})
      expected(what);
    return static_cast<T>(value_.get<std::uint64_t>());
  }
  [[nodiscard]] std::int64_t signed_bytes() const {
    if (!value_.is_number_integer() ||
        (value_.is_number_unsigned() &&
         value_.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<std::int64_t>::max()}))
      expected("a whole number of bytes");
    return value_.get<std::int64_t>();
  }
  [[nodiscard]] std::int64_t positive() const {
    const auto n = count<std::int64_t>("a whole number >= 1");
    if (n < 1) expected("a whole number >= 1");
    return n;
  }
  /// null, or a whole number >= 0.
  [[nodiscard]] std::optional<std::size_t> optional_index() const {
    if (value_.is_null()) return std::nullopt;
    if (!value_.is_number_unsigned()) expected("null or a whole number >= 0");
    return count<std::size_t>();
  }

 private:
  const nlohmann::json& value_;
  std::string path_;
  const document_context& context_;
};

/// The document's JSON; config_error naming `source` and the parser's reason otherwise.
inline nlohmann::json parse_document(std::istream& in, const document_context& context) {
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    // what() starts with "[json.exception.parse_error.N] ": keep the position and reason.
    std::string reason = e.what();
    if (const auto at = reason.find("] "); at != std::string::npos) reason.erase(0, at + 2);
    TANDEM_FAIL(config_error,
                context.source + ": not valid JSON (" + reason + "); " + context.remedy);
  }
}

/// Another version's fields may mean something else: refuse it rather than guess.
inline void check_schema_version(const json_field& root, int supported, const std::string& what,
                                 const document_context& context) {
  if (!root.json().is_object()) root.expected("an object");
  const auto version_field = root["schema_version"];
  if (!version_field.json().is_number_integer()) version_field.expected("a whole number");
  const auto version = version_field.json().get<std::int64_t>();
  if (version != supported) {
    TANDEM_FAIL(config_error, context.source + ": " + what + " of schema version " +
                                  std::to_string(version) + ", but this build of tandem reads " +
                                  "version " + std::to_string(supported) + " only; " +
                                  context.remedy);
  }
}

}  // namespace tandem
