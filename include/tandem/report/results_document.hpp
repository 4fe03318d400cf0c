#pragma once
// What `tandem report` draws from: a results file as tandem wrote it, recognised by its shape.
//
// Three kinds of file are read: the results of one run (`tandem run --json`, `tandem sim
// --json`; docs/results-schema.md), a comparison (`tandem sim --compare/--sweep-batch --json`:
// an array of such results, one per policy and batch) and a largest-batch search (`tandem
// maxbatch --json`). Anything else is refused with a message naming the file and what is wrong.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tandem::report {

enum class document_kind {
  run,         ///< one run's results (an object with "jobs")
  comparison,  ///< several runs' results side by side (an array of them)
  maxbatch,    ///< a largest-batch search (an object with "solo" and "colocated")
};

[[nodiscard]] const char* to_string(document_kind kind);

struct results_document {
  document_kind kind = document_kind::run;
  std::string source;  ///< the file it was read from, for messages and the page's title
  nlohmann::json json;
};

/// Reads `text` (the contents of `source`) and recognises its kind. Throws config_error naming
/// `source` when it is not JSON, or JSON of none of the three kinds, or lacks a field the report
/// needs (with the field's name and where it should be).
[[nodiscard]] results_document parse_results(std::string_view text, const std::string& source);

/// Reads and recognises the file at `path`. Throws io_error when it cannot be read (with the
/// system's reason), config_error as parse_results.
[[nodiscard]] results_document load_results(const std::filesystem::path& path);

}  // namespace tandem::report
