#include "tandem/report/memory_timeline.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "tandem/common/csv.hpp"
#include "tandem/common/error.hpp"

namespace tandem::report {
namespace {

constexpr std::string_view run_header =
    "time_s,job,event,unknown,persistent,feature_map,gradient,temporary,live_bytes,reserved_bytes";
constexpr std::string_view sim_header = "time_s,job,event,held_bytes";
constexpr std::array<const char*, 5> run_kinds{"unknown", "persistent", "feature_map", "gradient",
                                               "temporary"};

/// One row: a job's state after an event.
struct row {
  double time_s = 0;
  std::size_t job = 0;
  std::array<std::size_t, 5> kinds{};  ///< a simulation's: kinds[0] is the regions held
  std::size_t reserved = 0;            ///< a real run's regions held
};

[[noreturn]] void refuse(const std::string& source, std::size_t line, const std::string& why) {
  TANDEM_FAIL(config_error, "cannot read the timeline '" + source + "', line " +
                                std::to_string(line) + ": " + why);
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

}  // namespace

memory_timeline read_timeline(std::istream& in, const std::string& source, double end_s,
                              const std::vector<std::string>& job_order, std::size_t buckets) {
  TANDEM_EXPECTS(buckets > 0, usage_error, "a timeline needs at least one bucket");
  memory_timeline timeline;
  timeline.buckets = buckets;
  std::string line;
  if (!std::getline(in, line)) refuse(source, 1, "it is empty (expected a header line)");
  const auto header = trim(line);
  if (header == run_header) {
    timeline.format = timeline_format::run;
  } else if (header == sim_header) {
    timeline.format = timeline_format::sim;
  } else {
    refuse(source, 1,
           "unknown header '" + std::string(header.substr(0, 120)) +
               "'; expected a timeline that `tandem run --timeline` or `tandem sim --timeline` "
               "wrote");
  }
  const bool real = timeline.format == timeline_format::run;
  const std::size_t numbers = real ? 7 : 1;  // after the name and the event

  std::unordered_map<std::string, std::size_t> index;
  for (const auto& name : job_order) {
    if (index.emplace(name, timeline.jobs.size()).second) timeline.jobs.push_back(name);
  }
  std::vector<row> rows;
  double last_s = 0;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    const auto text = trim(line);
    if (text.empty()) continue;
    // A name with a comma or a quote is quoted (csv.hpp). Older timelines wrote it unquoted, so
    // the fields before the name and the numbers after it are counted from either end, and
    // whatever lies between is the name.
    const auto fields = csv_fields(text);
    if (fields.size() < numbers + 3) {
      refuse(source, number,
             "expected " + std::to_string(numbers + 3) + " fields, found " +
                 std::to_string(fields.size()));
    }
    const auto number_at = [&](std::size_t i, auto& value, const char* what) {
      const std::string_view field = fields[i];
      const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
      if (error != std::errc{} || end != field.data() + field.size())
        refuse(source, number, std::string(what) + " '" + std::string(field) + "' is not a number");
    };
    row r;
    number_at(0, r.time_s, "the time");
    if (!std::isfinite(r.time_s) || r.time_s < 0)
      refuse(source, number, "the time " + fields[0] + " is not a time in seconds");
    // The name: everything between the time and the event.
    const std::size_t name_end = fields.size() - numbers - 1;
    std::string name = fields[1];
    for (std::size_t i = 2; i < name_end; ++i) name += "," + fields[i];
    const auto [it, added] = index.emplace(name, timeline.jobs.size());
    if (added) timeline.jobs.push_back(name);
    r.job = it->second;
    const std::size_t first = name_end + 1;
    if (real) {
      for (std::size_t k = 0; k < run_kinds.size(); ++k)
        number_at(first + k, r.kinds[k], run_kinds[k]);
      std::size_t live = 0;
      number_at(first + 5, live, "live_bytes");
      number_at(first + 6, r.reserved, "reserved_bytes");
    } else {
      number_at(first, r.kinds[0], "held_bytes");
    }
    last_s = std::max(last_s, r.time_s);
    rows.push_back(r);
  }
  timeline.rows = rows.size();
  // Rows are written in time order; a stable sort keeps same-time rows in their order.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const row& a, const row& b) { return a.time_s < b.time_s; });
  timeline.end_s = std::max({end_s, last_s, 1e-9});

  const std::size_t kinds = real ? run_kinds.size() : 1;
  const std::size_t jobs = timeline.jobs.size();
  const double bucket_s = timeline.end_s / static_cast<double>(buckets);
  const auto bucket_of = [&](double t) {
    return std::min(buckets - 1, static_cast<std::size_t>(t / bucket_s));
  };

  // Pass 1 (Note [Timeline buckets]): for each bucket, the row after which the sum over all
  // jobs was highest (none: the state at the bucket's start), and the highest regions held.
  constexpr std::size_t none = SIZE_MAX;
  std::vector<std::size_t> best_row(buckets, none);
  std::vector<std::size_t> held_total(buckets, 0);
  {
    std::vector<std::size_t> job_sum(jobs, 0);
    std::vector<std::size_t> job_held(jobs, 0);
    std::size_t total = 0;
    std::size_t held = 0;
    std::size_t current = 0;  // the bucket whose start state is set
    std::size_t best = 0;
    const auto open = [&](std::size_t bucket) {  // a bucket starts with the state so far
      current = bucket;
      best = total;
      held_total[bucket] = held;
    };
    open(0);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      const auto bucket = bucket_of(r.time_s);
      while (current < bucket) open(current + 1);
      std::size_t sum = 0;
      for (std::size_t k = 0; k < kinds; ++k) sum += r.kinds[k];
      total = total - job_sum[r.job] + sum;
      job_sum[r.job] = sum;
      const std::size_t job_reserved = real ? r.reserved : sum;
      held = held - job_held[r.job] + job_reserved;
      job_held[r.job] = job_reserved;
      if (total > best || (total == best && best_row[bucket] != none)) {
        // Ties go to the later row: the state that lasts into the next bucket.
        best = total;
        best_row[bucket] = i;
      }
      held_total[bucket] = std::max(held_total[bucket], held);
    }
    while (current + 1 < buckets) open(current + 1);
  }

  // Pass 2: replay the rows, and copy every job's state into each bucket at its chosen row.
  std::vector<std::array<std::size_t, 5>> state(jobs, std::array<std::size_t, 5>{});
  std::vector<std::vector<std::size_t>> values(jobs * kinds, std::vector<std::size_t>(buckets, 0));
  const auto snapshot = [&](std::size_t bucket) {
    for (std::size_t j = 0; j < jobs; ++j)
      for (std::size_t k = 0; k < kinds; ++k) values[j * kinds + k][bucket] = state[j][k];
  };
  // A bucket without a chosen row shows its start state: taken on entering it, before its rows.
  if (best_row[0] == none) snapshot(0);
  std::size_t entered = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto bucket = bucket_of(rows[i].time_s);
    for (std::size_t b = entered + 1; b <= bucket; ++b) {
      if (best_row[b] == none) snapshot(b);
    }
    entered = std::max(entered, bucket);
    state[rows[i].job] = rows[i].kinds;
    if (best_row[bucket] == i) snapshot(bucket);
  }
  for (std::size_t b = entered + 1; b < buckets; ++b) snapshot(b);

  // Layers: a job's kind stays when the job has bytes of it in some bucket.
  for (std::size_t j = 0; j < jobs; ++j) {
    for (std::size_t k = 0; k < kinds; ++k) {
      auto& v = values[j * kinds + k];
      if (std::all_of(v.begin(), v.end(), [](std::size_t b) { return b == 0; })) continue;
      timeline.layers.push_back({j, real ? run_kinds[k] : "held", std::move(v)});
    }
  }
  if (real) timeline.held_total = std::move(held_total);
  return timeline;
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
