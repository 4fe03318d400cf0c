#include "tandem/report/html_report.hpp"

#include <string_view>

#include "report_assets.hpp"
#include "tandem/common/atomic_file.hpp"
#include "tandem/common/error.hpp"
#include "tandem/report/report_data.hpp"
#include "tandem/runtime/input_file.hpp"

namespace tandem::report {
namespace {

constexpr runtime::input_file_kind timeline_file{
    "timeline file", 0,  // read in pieces (timeline_reader): no cap
    "give the CSV that `tandem run --timeline` or `tandem sim --timeline` wrote"};

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// The data as JSON that cannot end the <script> element holding it: '<' only ever appears
/// inside JSON strings, where \u003c means the same.
std::string embeddable_json(const nlohmann::json& data) {
  const auto text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (const char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

/// Replaces the one `marker` in `page` by `text`.
void fill(std::string& page, std::string_view marker, const std::string& text) {
  const auto at = page.find(marker);
  TANDEM_ASSERT(at != std::string::npos, "the report template lacks a marker");
  page.replace(at, marker.size(), text);
}

std::vector<std::string> job_names(const results_document& results) {
  std::vector<std::string> names;
  for (const auto& job : results.json["jobs"]) {
    const auto& name = job["name"];
    TANDEM_EXPECTS(name.is_string(), config_error,
                   "cannot make a report of '" + results.source + "': a job's 'name' is " +
                       std::string(name.type_name()) + ", not a string");
    names.push_back(name.get<std::string>());
  }
  return names;
}

nlohmann::json data_with_timeline(const results_document& results, std::istream& timeline,
                                  const std::string& timeline_source, std::size_t buckets) {
  TANDEM_EXPECTS(results.kind == document_kind::run, config_error,
                 "a timeline belongs to one run, and '" + results.source + "' holds a " +
                     to_string(results.kind) + "; drop --timeline");
  const auto makespan = results.json["makespan_s"];
  const auto memory =
      read_timeline(timeline, timeline_source, makespan.is_number() ? makespan.get<double>() : 0,
                    job_names(results), buckets);
  return report_data(results, &memory);
}

}  // namespace

std::string render_html(const nlohmann::json& data) {
  std::string page(assets::page_html());
  const auto title = data.contains("title") && data["title"].is_string()
                         ? data["title"].get<std::string>()
                         : std::string("tandem report");
  // From the page's last marker to its first: each text goes in after the markers still to
  // fill, so a marker inside one (a job named "{{title}}") is never taken for the page's.
  fill(page, "{{script}}", std::string(assets::report_js()));
  fill(page, "{{data}}", embeddable_json(data));
  fill(page, "{{style}}", std::string(assets::report_css()));
  fill(page, "{{title}}", escape_html(title));
  return page;
}

nlohmann::json load_report_data(const report_request& request) {
  const auto results = load_results(request.results);
  if (!request.timeline) return report_data(results, nullptr);
  auto csv = runtime::open_input_file(*request.timeline, timeline_file);
  return data_with_timeline(results, csv, request.timeline->string(), request.buckets);
}

nlohmann::json report_data_from_text(const std::string& results_json, const std::string& source,
                                     const memory_timeline* timeline) {
  return report_data(parse_results(results_json, source), timeline);
}

void write_report(const nlohmann::json& data, const std::filesystem::path& out) {
  atomic_file file(out, "report");
  file.stream() << render_html(data);
  file.commit();
}

}  // namespace tandem::report
