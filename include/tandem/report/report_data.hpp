#pragma once
// The data a report page is built from: one JSON object made from a results document and,
// for one run, its memory timeline. The page (html_report.hpp) only draws and formats it; every
// number it shows comes from here, so a golden test of this object pins what a reader sees.
//
// Its shape (format 1), by `kind`:
// - "run": `title`, `system` (every top-level field of the results but the jobs, as they were),
//   `jobs` (each job's fields as they were, without its iteration log, plus `bars`: the log as
//   whole microseconds, requested, start, end for each iteration, each number the difference from
//   the one before), and `memory` (memory_timeline's to_json, or null without a timeline).
// - "comparison": `title`, `device`, `rows`: for each run its `batch` (the jobs' common batch
//   size, or "file" when they differ), `policy`, the system figures and `ratio` (aggregate
//   samples/s against the first policy of the same batch, as `tandem sim --compare` prints),
//   and each job's `name`, `batch_size` and `samples_per_s`.
// - "maxbatch": `title`, the search's settings as they were, `solo`, and `rows`: each co-located
//   search's `label` (the policy and its swept options), `max_batch`, `no_failure_found`,
//   `samples_per_s` and `ratio_percent`.

#include <nlohmann/json.hpp>

#include "tandem/report/memory_timeline.hpp"
#include "tandem/report/results_document.hpp"

namespace tandem::report {

inline constexpr int report_data_format = 1;

/// The page's data. `timeline`: the run's memory timeline (only with a run's results), or
/// nullptr.
[[nodiscard]] nlohmann::json report_data(const results_document& results,
                                         const memory_timeline* timeline);

}  // namespace tandem::report
