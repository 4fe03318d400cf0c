#include "report_command.hpp"

#include <filesystem>
#include <ostream>

#include "tandem/common/output_paths.hpp"
#include "tandem/report/html_report.hpp"

namespace tandem::cli {
namespace {

void say_written(const std::string& path, std::ostream& out) {
  std::error_code ignored;
  const auto bytes = std::filesystem::file_size(path, ignored);
  out << "report: " << path;
  if (!ignored) out << " (" << (bytes + 1023) / 1024 << " KiB)";
  out << '\n';
}

}  // namespace

int report_command(const report_command_options& options, std::ostream& out) {
  report::report_request request;
  request.results = options.results;
  if (!options.timeline.empty()) request.timeline = options.timeline;
  check_output_paths({options.results, options.timeline}, {{"--out", options.out}});
  // Everything is read and checked before the output is opened: bad input leaves it as it was.
  const auto data = report::load_report_data(request);
  report::write_report(data, options.out);
  say_written(options.out, out);
  return 0;
}

void write_report_from_text(const std::string& results_json, const std::string& source,
                            const report::memory_timeline* timeline, const std::string& path,
                            std::ostream& out) {
  report::write_report(report::report_data_from_text(results_json, source, timeline), path);
  say_written(path, out);
}

}  // namespace tandem::cli
