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
// in a minute, far more than a picture has pixels. The time from 0 to the end is cut into at
// most `buckets` equal buckets (timeline_reader: exactly that many when the end is known before
// the rows come, as it is for a file), and each bucket keeps one true state of every job: the state
// at the instant within the bucket when the sum over all jobs (live bytes; held bytes for a
// simulation) was highest, or the state at the bucket's start when nothing happened in it. So
// the stacked picture shows, at every bucket, a state that really occurred, and its top is the
// bucket's highest total: a peak is never smoothed away, however short. The regions held by all
// jobs together are kept the same way, as the highest total within each bucket. What a bucket
// cannot show is an event shorter than it between two others (a dip); zooming in on the page
// does not add resolution beyond the buckets.

#include <array>
#include <cstddef>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
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

/// Reads a timeline CSV piece by piece in memory that does not grow with it: each row goes into
/// its bucket as it comes (Note [Timeline buckets]), so a run of hours costs the same as one of
/// seconds. The buckets start `end_hint_s / buckets` long (a microsecond without a hint); a row
/// past the last one doubles their length, each new bucket keeping the higher of the two it
/// joins (the later on a tie), which is the state one bucket of the doubled length would have
/// chosen. So there are never more than `buckets`, and with an end hint that no row passes
/// there are exactly `buckets` over [0, end_hint_s].
class timeline_reader {
 public:
  /// `source` names the CSV in messages; `job_order` gives the jobs' order (the results'). A row
  /// naming a job beyond them is refused (the timeline of another run), unless the list is
  /// empty or holds an unnamed job (whose rows name its number): such jobs follow in order of
  /// appearance.
  timeline_reader(std::string source, const std::vector<std::string>& job_order,
                  double end_hint_s = 0, std::size_t buckets = 1500);

  /// The next piece of the CSV text, header first; a line may be split across pieces. Throws
  /// config_error with the source and line for an unknown header, a row with too few fields, a
  /// field that is not a number, or a line longer than any timeline writes.
  void add(std::string_view text);

  /// The timeline over [0, max(end_s, the last row's time)], its last bucket carrying the final
  /// state. Throws config_error when no header came.
  [[nodiscard]] memory_timeline finish(double end_s);

 private:
  struct bucket {
    std::size_t best_total = 0;  ///< the jobs' sum in the state kept
    bool from_row = false;       ///< the state kept is a row's (else the bucket's start state)
    std::size_t held = 0;        ///< the most regions held in all, in the bucket
    std::vector<std::array<std::size_t, 5>> state;  ///< per job; a job beyond its size held 0
  };

  void add_line(std::string_view line);
  void add_row(double time_s, std::size_t job, const std::array<std::size_t, 5>& kinds,
               std::size_t reserved);
  /// Doubles the buckets' length, merging them in pairs.
  void widen();
  [[nodiscard]] bool covers(double time_s) const;
  void open_through(std::size_t bucket);

  std::string source_;
  std::size_t max_buckets_;
  double bucket_s_;
  double covered_s_;     ///< bucket_s_ * max_buckets_, doubled exactly as the buckets are
  std::string pending_;  ///< the start of a line whose end has not come yet
  std::size_t line_ = 0;
  bool header_seen_ = false;
  memory_timeline timeline_;
  std::unordered_map<std::string, std::size_t> index_;
  bool only_listed_jobs_ = false;
  double last_s_ = 0;
  std::vector<std::array<std::size_t, 5>> state_;  ///< every job's latest row
  std::vector<std::size_t> job_sum_;
  std::vector<std::size_t> job_held_;
  std::size_t total_ = 0;
  std::size_t held_ = 0;
  std::vector<bucket> buckets_;  ///< opened so far; the last one is the current one
};

/// A whole timeline CSV from `in` (`source` names it in messages), read in chunks through a
/// timeline_reader whose end hint is `end_s`, finished at `end_s`. Throws config_error as the
/// reader does, and io_error when `in` fails.
[[nodiscard]] memory_timeline read_timeline(std::istream& in, const std::string& source,
                                            double end_s, const std::vector<std::string>& job_order,
                                            std::size_t buckets = 1500);

/// The timeline as the page reads it: each layer's values as changes ([bucket, value, ...]:
/// the value holds until the next change), which keeps a job that ran for a tenth of the time
/// to a tenth of the text.
[[nodiscard]] nlohmann::json to_json(const memory_timeline& timeline);

}  // namespace tandem::report
