#pragma once
// A run's memory timeline (the CSV of `--timeline`) reduced to what a page can draw fast.
//
// Two CSV formats are read, told apart by their header:
// - a real run's (`tandem run --timeline`): one row per pool event, with the job's live bytes by
//   kind and the regions it holds after the event
//   (time_s,job,event,unknown,persistent,feature_map,gradient,temporary,live_bytes,reserved_bytes);
// - a simulation's (`tandem sim --timeline`): one row per iteration start and end, region borrow
//   and return, and departure, with the regions the job holds after it
//   (time_s,job,event,held_bytes).
//
// Note [Timeline buckets]: a real run writes a row for every allocation, hundreds of thousands
// in a minute, far more than a picture has pixels. The time from 0 to the end is cut into
// `buckets` equal buckets, and each bucket keeps one true state of every job: the state at the
// instant within the bucket when the sum over all jobs (live bytes; held bytes for a
// simulation) was highest, or the state at the bucket's start when nothing happened in it. So
// the stacked picture shows, at every bucket, a state that really occurred, and its top is the
// bucket's highest total: a peak is never smoothed away, however short. The regions held by all
// jobs together are kept the same way, as the highest total within each bucket. What a bucket
// cannot show is an event shorter than it between two others (a dip); zooming in on the page
// does not add resolution beyond the buckets.

#include <cstddef>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::report {

enum class timeline_format {
  run,  ///< a real run's pool events: live bytes by kind, regions held
  sim,  ///< a simulation's: regions held
};

/// One stacked layer: a job's bytes of one kind, one value per bucket.
struct timeline_layer {
  std::size_t job = 0;  ///< index into memory_timeline::jobs
  std::string kind;     ///< "persistent", "feature_map", ...; "held" in a simulation's
  std::vector<std::size_t> values;
};

struct memory_timeline {
  timeline_format format = timeline_format::run;
  double end_s = 0;         ///< the buckets cover [0, end_s]
  std::size_t buckets = 0;  ///< each end_s / buckets long
  std::size_t rows = 0;     ///< rows read
  std::vector<std::string> jobs;
  /// Jobs in order, and within a job the kinds in the CSV's order; a job's kind that stays 0
  /// throughout is left out.
  std::vector<timeline_layer> layers;
  /// A real run's regions held by all jobs, the highest within each bucket; empty for a
  /// simulation (its layers are the regions held).
  std::vector<std::size_t> held_total;
};

/// Reads a timeline CSV from `in` (`source` names it in messages) into `buckets` buckets over
/// [0, max(end_s, last row's time)]. `job_order` gives the jobs' order (the results'); jobs the
/// CSV names beyond them follow in order of appearance. Throws config_error with the source and
/// line for an unknown header, a row with too few fields or a field that is not a number.
[[nodiscard]] memory_timeline read_timeline(std::istream& in, const std::string& source,
                                            double end_s, const std::vector<std::string>& job_order,
                                            std::size_t buckets = 1500);

/// The timeline as the page reads it: each layer's values as changes ([bucket, value, ...]:
/// the value holds until the next change), which keeps a job that ran for a tenth of the time
/// to a tenth of the text.
[[nodiscard]] nlohmann::json to_json(const memory_timeline& timeline);

}  // namespace tandem::report
