#pragma once
// `tandem report`: a results file (and a run's timeline) as one self-contained HTML page; and
// the `--report FILE` of `tandem run` and `tandem sim`, which make the same page from what they
// have just measured.

#include <iosfwd>
#include <string>

#include "tandem/report/memory_timeline.hpp"

namespace tandem::cli {

struct report_command_options {
  std::string results;   ///< the JSON of tandem run, sim (--compare too) or maxbatch
  std::string timeline;  ///< a run's timeline CSV; empty: none
  std::string out = "report.html";
};

/// Writes the page (whole or not at all) and says where. Returns 0; throws config_error or
/// io_error for input it cannot take (exit status 2).
int report_command(const report_command_options& options, std::ostream& out);

/// The page from results text in memory and the run's reduced timeline (nullptr: none), written
/// to `path`; says where on `out`.
void write_report_from_text(const std::string& results_json, const std::string& source,
                            const report::memory_timeline* timeline, const std::string& path,
                            std::ostream& out);

}  // namespace tandem::cli
