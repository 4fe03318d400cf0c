#include "tandem/report/memory_timeline.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "tandem/common/csv.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"

namespace tandem::report {
namespace {

constexpr std::string_view run_header =
    "time_s,job,event,unknown,persistent,feature_map,gradient,temporary,live_bytes,reserved_bytes";
constexpr std::string_view sim_header = "time_s,job,event,held_bytes";
constexpr std::array<const char*, 5> run_kinds{"unknown", "persistent", "feature_map", "gradient",
                                               "temporary"};

/// The first few of `jobs`, for a message.
std::string listed_jobs(const std::vector<std::string>& jobs) {
  constexpr std::size_t shown = 8;
  if (jobs.size() <= shown) return join_names(jobs);
  return join_names({jobs.begin(), jobs.begin() + shown}) + ", ...";
}

[[noreturn]] void refuse(const std::string& source, std::size_t line, const std::string& why) {
  TANDEM_FAIL(config_error, "cannot read the timeline '" + source + "', line " +
                                std::to_string(line) + ": " + why);
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

/// Longer than any line a timeline holds (a name is at most a few hundred bytes): a file without
/// line breaks is refused rather than read whole.
constexpr std::size_t max_line_bytes = 64 * 1024;
/// Thirty years: a time beyond it is no run's.
constexpr double max_time_s = 1e9;
/// How far back a row may come after an earlier one (see add_line).
constexpr double out_of_order_s = 0.1;

/// The largest time in the rows of a timeline CSV read from `in` to its end (0 when none reads
/// as a number); each row's first field only, so a bad row is left for the reader to name, and
/// only a line's first bytes are kept, so a file without line breaks costs no memory.
double last_time(std::istream& in) {
  double last = 0;
  std::array<char, 256> start{};
  bool header = true;
  for (;;) {
    in.getline(start.data(), static_cast<std::streamsize>(start.size()));
    if (in.bad() || (in.gcount() == 0 && in.eof())) break;
    if (in.fail() && !in.eof()) {  // a line longer than `start`: the rest of it is skipped
      in.clear();
      in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    if (std::exchange(header, false)) continue;
    const std::string_view line(start.data());
    const auto field = line.substr(0, line.find(','));
    double time_s = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), time_s);
    if (error == std::errc{} && std::isfinite(time_s)) last = std::max(last, time_s);
    if (in.eof()) break;
  }
  return last;
}

}  // namespace

timeline_reader::timeline_reader(std::string source, const std::vector<std::string>& job_order,
                                 double end_hint_s, std::size_t buckets)
    : source_(std::move(source)), max_buckets_(buckets) {
  TANDEM_EXPECTS(buckets > 0, usage_error, "a timeline needs at least one bucket");
  const bool hinted = std::isfinite(end_hint_s) && end_hint_s > 0;
  bucket_s_ = hinted ? end_hint_s / static_cast<double>(buckets) : 1e-6;
  covered_s_ = hinted ? end_hint_s : bucket_s_ * static_cast<double>(buckets);
  for (const auto& name : job_order) {
    if (index_.emplace(name, timeline_.jobs.size()).second) timeline_.jobs.push_back(name);
  }
  only_listed_jobs_ =
      !job_order.empty() && std::none_of(job_order.begin(), job_order.end(),
                                         [](const std::string& name) { return name.empty(); });
  state_.resize(timeline_.jobs.size());
  job_sum_.resize(timeline_.jobs.size());
  job_held_.resize(timeline_.jobs.size());
}

void timeline_reader::add(std::string_view text) {
  while (!text.empty()) {
    const auto end = text.find('\n');
    if (end == std::string_view::npos) {
      pending_.append(text);
      if (pending_.size() > max_line_bytes) {
        refuse(source_, line_ + 1,
               "a line longer than " + std::to_string(max_line_bytes) +
                   " bytes; this is not a timeline that tandem wrote");
      }
      return;
    }
    if (pending_.empty()) {
      add_line(text.substr(0, end));
    } else {
      pending_.append(text.substr(0, end));
      add_line(pending_);
      pending_.clear();
    }
    text.remove_prefix(end + 1);
  }
}

void timeline_reader::add_line(std::string_view raw) {
  ++line_;
  if (raw.size() > max_line_bytes) {
    refuse(source_, line_,
           "a line longer than " + std::to_string(max_line_bytes) +
               " bytes; this is not a timeline that tandem wrote");
  }
  const auto text = trim(raw);
  if (!header_seen_) {
    if (text == run_header) {
      timeline_.format = timeline_format::run;
    } else if (text == sim_header) {
      timeline_.format = timeline_format::sim;
    } else {
      refuse(source_, line_,
             "unknown header '" + std::string(text.substr(0, 120)) +
                 "'; expected a timeline that `tandem run --timeline` or `tandem sim --timeline` "
                 "wrote");
    }
    header_seen_ = true;
    return;
  }
  if (text.empty()) return;
  const bool real = timeline_.format == timeline_format::run;
  const std::size_t numbers = real ? 7 : 1;  // after the name and the event
  // A name with a comma or a quote is quoted (csv.hpp). Older timelines wrote it unquoted, so
  // the fields before the name and the numbers after it are counted from either end, and
  // whatever lies between is the name.
  const auto fields = csv_fields(text);
  if (fields.size() < numbers + 3) {
    refuse(source_, line_,
           "expected " + std::to_string(numbers + 3) + " fields, found " +
               std::to_string(fields.size()));
  }
  const auto number_at = [&](std::size_t i, auto& value, const char* what) {
    const std::string_view field = fields[i];
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (error != std::errc{} || end != field.data() + field.size())
      refuse(source_, line_, std::string(what) + " '" + std::string(field) + "' is not a number");
  };
  double time_s = 0;
  number_at(0, time_s, "the time");
  if (!std::isfinite(time_s) || time_s < 0 || time_s > max_time_s)
    refuse(source_, line_, "the time " + fields[0] + " is not a time in seconds");
  // Rows are written in time order (older tandems stamped a real run's events just before the
  // monitor's lock, so rows of two threads could come a little out of order); a row further
  // back than that is not a timeline tandem wrote (a sorted or shuffled file).
  if (time_s + out_of_order_s < last_s_) {
    refuse(source_, line_,
           "the time " + fields[0] + " s comes before an earlier row's " + std::to_string(last_s_) +
               " s; a timeline's rows are in time order, as tandem wrote them");
  }
  // The name: everything between the time and the event.
  const std::size_t name_end = fields.size() - numbers - 1;
  std::string name = fields[1];
  for (std::size_t i = 2; i < name_end; ++i) name += "," + fields[i];
  if (only_listed_jobs_ && !index_.contains(name)) {
    refuse(source_, line_,
           "a row of job '" + name.substr(0, 120) + "', which the results do not have (" +
               std::to_string(timeline_.jobs.size()) + " jobs: " + listed_jobs(timeline_.jobs) +
               "); give the timeline of the run whose results these are");
  }
  const auto [it, added] = index_.emplace(name, timeline_.jobs.size());
  if (added) {
    timeline_.jobs.push_back(name);
    state_.emplace_back();
    job_sum_.push_back(0);
    job_held_.push_back(0);
  }
  const std::size_t first = name_end + 1;
  std::array<std::size_t, 5> kinds{};
  std::size_t reserved = 0;
  if (real) {
    for (std::size_t k = 0; k < run_kinds.size(); ++k) number_at(first + k, kinds[k], run_kinds[k]);
    std::size_t live = 0;
    number_at(first + 5, live, "live_bytes");
    number_at(first + 6, reserved, "reserved_bytes");
  } else {
    number_at(first, kinds[0], "held_bytes");
    reserved = kinds[0];
  }
  add_row(time_s, it->second, kinds, reserved);
}

bool timeline_reader::covers(double time_s) const {
  // A row at the hinted end itself falls in the last bucket, as it would with fixed buckets, and
  // so does one a microsecond past it (times are written to the microsecond, rounded).
  return time_s <= covered_s_ * (1 + 1e-12) + 1e-6;
}

void timeline_reader::widen() {
  std::vector<bucket> merged;
  merged.reserve((buckets_.size() + 1) / 2);
  for (std::size_t i = 0; i < buckets_.size(); i += 2) {
    if (i + 1 == buckets_.size()) {
      merged.push_back(std::move(buckets_[i]));
      continue;
    }
    auto& earlier = buckets_[i];
    auto& later = buckets_[i + 1];
    // The later state on a tie: with one bucket, the later row would have replaced the earlier.
    auto& kept = later.best_total >= earlier.best_total ? later : earlier;
    bucket joined{kept.best_total, earlier.from_row || later.from_row,
                  std::max(earlier.held, later.held), std::move(kept.state)};
    merged.push_back(std::move(joined));
  }
  buckets_ = std::move(merged);
  bucket_s_ *= 2;
  covered_s_ *= 2;
}

void timeline_reader::open_through(std::size_t index) {
  // A bucket starts with the state so far: what it shows when nothing in it rises above it.
  while (buckets_.size() <= index) buckets_.push_back({total_, false, held_, state_});
}

void timeline_reader::add_row(double time_s, std::size_t job,
                              const std::array<std::size_t, 5>& kinds, std::size_t reserved) {
  ++timeline_.rows;
  last_s_ = std::max(last_s_, time_s);
  while (!covers(time_s)) widen();
  // A row a little behind an earlier one (see add_line) goes into the current bucket.
  std::size_t index = std::min(max_buckets_ - 1, static_cast<std::size_t>(time_s / bucket_s_));
  if (!buckets_.empty()) index = std::max(index, buckets_.size() - 1);
  open_through(index);

  std::size_t sum = 0;
  for (const auto bytes : kinds) sum += bytes;
  total_ = total_ - job_sum_[job] + sum;
  job_sum_[job] = sum;
  held_ = held_ - job_held_[job] + reserved;
  job_held_[job] = reserved;
  state_[job] = kinds;

  auto& current = buckets_[index];
  if (total_ > current.best_total || (total_ == current.best_total && current.from_row)) {
    // Ties go to the later row: the state that lasts into the next bucket.
    current.best_total = total_;
    current.from_row = true;
    current.state = state_;
  }
  current.held = std::max(current.held, held_);
}

memory_timeline timeline_reader::finish(double end_s) {
  if (!pending_.empty()) {
    const std::string last = std::move(pending_);
    pending_.clear();
    add_line(last);
  }
  if (!header_seen_) refuse(source_, 1, "it is empty (expected a header line)");
  const double end = std::max({std::isfinite(end_s) ? end_s : 0.0, last_s_, 1e-9});
  while (!covers(end)) widen();
  const auto used = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::ceil(end / bucket_s_ * (1 - 1e-12))), 1, max_buckets_);
  open_through(used - 1);

  memory_timeline timeline = timeline_;
  timeline.buckets = used;
  timeline.end_s = used == max_buckets_ ? covered_s_ : bucket_s_ * static_cast<double>(used);
  const bool real = timeline.format == timeline_format::run;
  const std::size_t kinds = real ? run_kinds.size() : 1;
  // Layers: a job's kind stays when the job has bytes of it in some bucket.
  for (std::size_t j = 0; j < timeline.jobs.size(); ++j) {
    for (std::size_t k = 0; k < kinds; ++k) {
      std::vector<std::size_t> values(used, 0);
      bool any = false;
      for (std::size_t b = 0; b < used; ++b) {
        const auto& state = buckets_[b].state;
        values[b] = j < state.size() ? state[j][k] : 0;
        any = any || values[b] != 0;
      }
      if (any) timeline.layers.push_back({j, real ? run_kinds[k] : "held", std::move(values)});
    }
  }
  if (real) {
    timeline.held_total.resize(used);
    for (std::size_t b = 0; b < used; ++b) timeline.held_total[b] = buckets_[b].held;
  }
  return timeline;
}

memory_timeline read_timeline(std::istream& in, const std::string& source, double end_s,
                              const std::vector<std::string>& job_order, std::size_t buckets) {
  // A file is read twice: first for its last row's time, which may come a little after the
  // results' makespan (a job's last frees, a time rounded up to the microsecond), so that the
  // buckets cover exactly [0, the later of the two] (a pipe is read once, with the makespan).
  double end_hint = end_s;
  if (const auto start = in.tellg(); start != std::streampos(-1)) {
    const double last = last_time(in);
    in.clear();
    in.seekg(start);
    if (!in) TANDEM_FAIL(io_error, "cannot read the timeline '" + source + "' again");
    if (end_s > 0 && last > 10 * end_s + 60) {
      std::ostringstream why;
      why << "the timeline '" << source << "' runs to " << std::setprecision(6) << last
          << " s, far past the run's makespan of " << end_s
          << " s; give the timeline of the run whose results these are";
      TANDEM_FAIL(config_error, why.str());
    }
    end_hint = std::max(end_hint, last);
  }
  timeline_reader reader(source, job_order, end_hint, buckets);
  std::array<char, 64 * 1024> chunk{};
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    reader.add(std::string_view(chunk.data(), static_cast<std::size_t>(in.gcount())));
  }
  if (in.bad()) TANDEM_FAIL(io_error, "cannot read the timeline '" + source + "'");
  return reader.finish(end_hint);
}

nlohmann::json to_json(const memory_timeline& timeline) {
  const auto changes = [](const std::vector<std::size_t>& values) {
    auto list = nlohmann::json::array();
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i == 0 ? values[i] != 0 : values[i] != values[i - 1]) {
        list.push_back(i);
        list.push_back(values[i]);
      }
    }
    return list;
  };
  auto layers = nlohmann::json::array();
  for (const auto& layer : timeline.layers) {
    layers.push_back(
        {{"job", layer.job}, {"kind", layer.kind}, {"changes", changes(layer.values)}});
  }
  return {{"format", timeline.format == timeline_format::run ? "run" : "sim"},
          {"end_s", timeline.end_s},
          {"buckets", timeline.buckets},
          {"rows", timeline.rows},
          {"jobs", timeline.jobs},
          {"layers", layers},
          {"held_total",
           timeline.held_total.empty() ? nlohmann::json(nullptr) : changes(timeline.held_total)}};
}

}  // namespace tandem::report
