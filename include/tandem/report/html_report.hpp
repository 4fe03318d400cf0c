#pragma once
// A report as one self-contained HTML file: the page's data (report_data.hpp) embedded as JSON,
// with the stylesheet and the script that draws it (src/report/assets/, embedded at build time).
// Nothing is fetched when the file is opened: no network, no other file.
//
// The charts are SVG that the page's own script draws from the data (Note [Report charts] in
// src/report/assets/report.js says why no charting library): hover shows the values under the
// pointer, dragging across a time chart zooms every time chart to that span, and each chart
// exports itself as SVG or PNG for a paper.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tandem/report/memory_timeline.hpp"

namespace tandem::report {

/// The page for `data` (report_data's). The data is embedded so that no text in it can end the
/// script element it sits in.
[[nodiscard]] std::string render_html(const nlohmann::json& data);

/// Where a report comes from: a results file, and for one run optionally its timeline.
struct report_request {
  std::filesystem::path results;
  std::optional<std::filesystem::path> timeline;
  std::size_t buckets = 1500;  ///< memory timeline buckets (Note [Timeline buckets])
};

/// Reads the inputs and builds the page's data. Throws io_error for a file that cannot be read,
/// config_error for one that is not what it should be (a timeline with a comparison).
[[nodiscard]] nlohmann::json load_report_data(const report_request& request);

/// Builds the page from results text in memory and the run's timeline as it was reduced while
/// the run wrote it (`tandem run --report`, `tandem sim --report`: timeline_stream); `timeline`
/// nullptr: none.
[[nodiscard]] nlohmann::json report_data_from_text(const std::string& results_json,
                                                   const std::string& source,
                                                   const memory_timeline* timeline);

/// Writes the page whole or not at all (atomic_file). Throws io_error.
void write_report(const nlohmann::json& data, const std::filesystem::path& out);

}  // namespace tandem::report
