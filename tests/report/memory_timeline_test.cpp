// The memory timeline's buckets (Note [Timeline buckets] in memory_timeline.hpp): each bucket is
// one true state of every job, at the moment the jobs' sum was highest; nothing is averaged.

#include "tandem/report/memory_timeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "tandem/common/csv.hpp"
#include "tandem/common/error.hpp"
#include "tandem/report/timeline_stream.hpp"

namespace tandem::report {
namespace {

constexpr const char* sim_header = "time_s,job,event,held_bytes\n";
constexpr const char* run_header =
    "time_s,job,event,unknown,persistent,feature_map,gradient,temporary,live_bytes,"
    "reserved_bytes\n";

memory_timeline read(const std::string& csv, double end_s, std::size_t buckets,
                     const std::vector<std::string>& jobs = {}) {
  std::istringstream in(csv);
  return read_timeline(in, "t.csv", end_s, jobs, buckets);
}

const timeline_layer& layer(const memory_timeline& t, const std::string& job,
                            const std::string& kind) {
  for (const auto& l : t.layers) {
    if (t.jobs[l.job] == job && l.kind == kind) return l;
  }
  throw std::runtime_error("no layer " + job + " " + kind);
}

TEST(MemoryTimeline, KeepsAPeakShorterThanItsBucket) {
  const auto t = read(
      std::string(sim_header) + "0,a,iteration_start,100\n0.5,a,borrow,900\n0.51,a,return,100\n",
      2.0, 2);
  EXPECT_EQ(layer(t, "a", "held").values, (std::vector<std::size_t>{900, 100}));
}

TEST(MemoryTimeline, ShowsOneTrueStateOfEveryJobPerBucket) {
  // a peaks at 0.2 while b holds 100; b peaks at 0.6 while a holds 100. The highest sum is a's
  // peak (800 + 100); a's and b's peaks never held together, so 800 + 700 must not appear.
  const auto t = read(std::string(sim_header) +
                          "0,a,s,100\n0,b,s,100\n0.2,a,borrow,800\n0.3,a,return,100\n"
                          "0.6,b,borrow,700\n0.7,b,return,100\n",
                      1.0, 1);
  EXPECT_EQ(layer(t, "a", "held").values, (std::vector<std::size_t>{800}));
  EXPECT_EQ(layer(t, "b", "held").values, (std::vector<std::size_t>{100}));
}

TEST(MemoryTimeline, CarriesTheStateThroughQuietBuckets) {
  const auto t = read(std::string(sim_header) + "0.1,a,s,300\n2.2,a,return,0\n", 3.0, 6);
  EXPECT_EQ(layer(t, "a", "held").values, (std::vector<std::size_t>{300, 300, 300, 300, 300, 0}));
}

TEST(MemoryTimeline, ARealRunKeepsItsKindsAndTheRegionsHeld) {
  // Kinds in the CSV's order: unknown, persistent, feature_map, gradient, temporary; a job's
  // kind that stays 0 is left out. The second bucket starts with x's feature maps still live.
  const auto t = read(std::string(run_header) +
                          "0.0,x,alloc,0,10,0,0,0,10,64\n"
                          "0.1,x,alloc,0,10,50,0,0,60,128\n"
                          "0.1,y,alloc,0,20,0,5,0,25,64\n"
                          "0.3,x,free,0,10,0,0,0,10,128\n"
                          "0.35,x,return,0,10,0,0,0,10,64\n",
                      0.4, 2, {"y", "x"});
  EXPECT_EQ(t.format, timeline_format::run);
  EXPECT_EQ(t.jobs, (std::vector<std::string>{"y", "x"}));  // the results' order
  ASSERT_EQ(t.layers.size(), 4u);
  EXPECT_EQ(layer(t, "x", "persistent").values, (std::vector<std::size_t>{10, 10}));
  EXPECT_EQ(layer(t, "x", "feature_map").values, (std::vector<std::size_t>{50, 50}));
  EXPECT_EQ(layer(t, "y", "gradient").values, (std::vector<std::size_t>{5, 5}));
  EXPECT_EQ(layer(t, "y", "persistent").values, (std::vector<std::size_t>{20, 20}));
  EXPECT_EQ(t.held_total, (std::vector<std::size_t>{192, 192}));
  EXPECT_EQ(t.rows, 5u);
}

TEST(MemoryTimeline, NamesMayHoldCommas) {
  // Unquoted, as timelines were written before names were quoted.
  const auto t = read(std::string(sim_header) + "0,job, with comma,s,7\n", 1.0, 1);
  EXPECT_EQ(t.jobs, (std::vector<std::string>{"job, with comma"}));
}

TEST(MemoryTimeline, QuotedNamesReadBackAsWritten) {
  const std::string odd = "a,\"b\", c";
  const auto row = [&](const char* rest) { return "0," + csv_field(odd) + rest; };
  ASSERT_EQ(csv_field(odd), "\"a,\"\"b\"\", c\"");
  const auto sim = read(std::string(sim_header) + row(",s,7\n"), 1.0, 1, {odd});
  EXPECT_EQ(sim.jobs, (std::vector<std::string>{odd}));
  const auto run = read(std::string(run_header) + row(",alloc,0,1,2,3,4,10,20\n"), 1.0, 1, {odd});
  EXPECT_EQ(run.jobs, (std::vector<std::string>{odd}));
  EXPECT_EQ(csv_field("plain"), "plain");
}

TEST(MemoryTimeline, SaysWhereACsvIsWrong) {
  const auto message = [](const std::string& csv) {
    try {
      static_cast<void>(read(csv, 1.0, 4));
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("").find("'t.csv', line 1: it is empty"), std::string::npos);
  EXPECT_NE(message("a,b\n").find("line 1: unknown header 'a,b'"), std::string::npos);
  EXPECT_NE(message(std::string(sim_header) + "0,a,s,1\n0.5,a,s\n").find("line 3: expected 4"),
            std::string::npos);
  EXPECT_NE(message(std::string(sim_header) + "0,a,s,lots\n")
                .find("line 2: held_bytes 'lots' is not a number"),
            std::string::npos);
  EXPECT_NE(message(std::string(sim_header) + "-1,a,s,3\n").find("line 2: the time -1"),
            std::string::npos);
}

TEST(MemoryTimeline, WithoutAnEndHintBucketsDoubleAndEachStillHoldsItsHighestTrueState) {
  // Rows over six orders of magnitude of time, read without knowing the end: the buckets double
  // many times. Each final bucket must hold the highest sum that occurred in it (its start state
  // or after one of its rows), in a state that did occur, as fixed buckets of the final length
  // would (Note [Timeline buckets]).
  std::mt19937 random(7);
  for (int trial = 0; trial < 20; ++trial) {
    struct row {
      double t;
      std::size_t job;
      std::size_t held;
    };
    std::vector<row> rows;
    double t = 0;
    for (int i = 0; i < 400; ++i) {
      t += std::exp(std::uniform_real_distribution<double>(-14, 0)(random));
      rows.push_back({t, random() % 3u, random() % 1000u});
    }
    std::string csv = sim_header;
    for (const auto& r : rows)
      csv += std::to_string(r.t) + ",j" + std::to_string(r.job) + ",e," + std::to_string(r.held) +
             "\n";
    const std::size_t max_buckets = 1u + random() % 24u;
    timeline_reader reader("t.csv", {"j0", "j1", "j2"}, 0, max_buckets);
    // In pieces of random length: a line may be split anywhere.
    for (std::size_t at = 0; at < csv.size();) {
      const std::size_t piece = std::min<std::size_t>(csv.size() - at, 1u + random() % 40u);
      reader.add(std::string_view(csv).substr(at, piece));
      at += piece;
    }
    const auto timeline = reader.finish(0);
    ASSERT_LE(timeline.buckets, max_buckets);
    ASSERT_GE(timeline.buckets, 1u);
    ASSERT_EQ(timeline.rows, rows.size());
    const double width = timeline.end_s / static_cast<double>(timeline.buckets);

    // The states that occurred within each bucket of the final length, read back as printed.
    std::istringstream printed(csv);
    std::string line;
    std::getline(printed, line);
    std::vector<std::set<std::vector<std::size_t>>> occurred(timeline.buckets);
    std::vector<std::size_t> state(3, 0);
    std::size_t bucket = 0;
    occurred[0].insert(state);
    while (std::getline(printed, line)) {
      const auto fields = csv_fields(line);
      const double at = std::stod(fields[0]);
      const auto index = std::min(timeline.buckets - 1, static_cast<std::size_t>(at / width));
      for (; bucket < index; ++bucket) occurred[bucket + 1].insert(state);
      state[static_cast<std::size_t>(fields[1][1] - '0')] = std::stoul(fields[3]);
      occurred[bucket].insert(state);
    }
    for (; bucket + 1 < timeline.buckets; ++bucket) occurred[bucket + 1].insert(state);

    for (std::size_t b = 0; b < timeline.buckets; ++b) {
      std::vector<std::size_t> shown(3, 0);
      for (const auto& l : timeline.layers) shown[l.job] = l.values[b];
      std::size_t highest = 0;
      for (const auto& s : occurred[b]) highest = std::max(highest, s[0] + s[1] + s[2]);
      EXPECT_TRUE(occurred[b].count(shown)) << "trial " << trial << ", bucket " << b;
      EXPECT_EQ(shown[0] + shown[1] + shown[2], highest) << "trial " << trial << ", bucket " << b;
    }
  }
}

TEST(MemoryTimeline, AStreamPassesItsTextOnAndReducesItAsItComes) {
  std::ostringstream copy;
  timeline_stream stream("the run's timeline", {"b", "a"}, &copy, 4);
  std::string csv = run_header;
  for (int i = 0; i < 5000; ++i) {
    csv += std::to_string(i * 1e-3) + (i % 2 ? ",a" : ",b") + ",alloc,0," + std::to_string(i) +
           ",0,0,0," + std::to_string(i) + ",64\n";
  }
  stream << csv;
  const auto timeline = stream.finish(0);
  EXPECT_EQ(copy.str(), csv);
  timeline_reader whole("the run's timeline", {"b", "a"}, 0, 4);
  whole.add(csv);
  const auto expected = whole.finish(0);
  EXPECT_EQ(timeline.jobs, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(timeline.buckets, expected.buckets);
  EXPECT_EQ(to_json(timeline), to_json(expected));
  EXPECT_EQ(layer(timeline, "a", "persistent").values.back(), 4999u);
}

TEST(MemoryTimeline, RefusesALineLongerThanAnyTimelineWrites) {
  timeline_reader reader("t.csv", {}, 1.0, 4);
  reader.add(sim_header);
  const std::string endless(100 * 1024, 'x');
  try {
    reader.add(endless);
    FAIL() << "accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("'t.csv', line 2: a line longer than"), std::string::npos);
  }
}

TEST(MemoryTimeline, AFileWhoseLastRowIsPastTheMakespanKeepsEveryBucket) {
  // The results' makespan rounds below the last row's time (a microsecond here): the file is
  // read twice, so the buckets still cover it exactly, all of them.
  const auto t = read(std::string(sim_header) + "0,a,s,5\n1.000001,a,completed,0\n", 1.0, 10);
  EXPECT_EQ(t.buckets, 10u);
  EXPECT_DOUBLE_EQ(t.end_s, 1.000001);
  const auto late = read(std::string(sim_header) + "0,a,s,5\n1.5,a,completed,0\n", 1.0, 10);
  EXPECT_EQ(late.buckets, 10u);
  EXPECT_DOUBLE_EQ(late.end_s, 1.5);
}

TEST(MemoryTimeline, RefusesRowsThatNoRunOfTheseResultsWrote) {
  const auto message = [](const std::string& csv, double end_s) {
    try {
      static_cast<void>(read(csv, end_s, 4));
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // Sorted the wrong way round: every row would fall into the first row's bucket.
  EXPECT_NE(message(std::string(sim_header) + "2,a,s,5\n1,a,s,6\n", 2.0)
                .find("line 3: the time 1 s comes before an earlier row's"),
            std::string::npos);
  // A little out of order is how older timelines of real runs were written.
  EXPECT_EQ(message(std::string(sim_header) + "1,a,s,5\n0.999,b,s,6\n", 2.0), "accepted");
  EXPECT_NE(message(std::string(sim_header) + "1e300,a,s,5\n", 0).find("is not a time"),
            std::string::npos);
  EXPECT_NE(message(std::string(sim_header) + "0,a,s,5\n1000,a,s,6\n", 2.0)
                .find("runs to 1000 s, far past the run's makespan of 2 s"),
            std::string::npos);
  // A long line in one piece is refused as one split across pieces is.
  EXPECT_NE(message(std::string(sim_header) + "0," + std::string(70000, 'x') + ",s,5\n", 1.0)
                .find("line 2: a line longer than"),
            std::string::npos);
}

TEST(MemoryTimeline, RefusesAJobTheResultsDoNotHave) {
  const auto csv = std::string(sim_header) + "0,a,s,5\n0.5,c,s,6\n";
  try {
    static_cast<void>(read(csv, 1.0, 4, {"a", "b"}));
    ADD_FAILURE() << "a timeline of job c was drawn beside results of a and b";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3: a row of job 'c', which the results do not "
                                         "have (2 jobs: a, b); give the timeline of the run"),
              std::string::npos)
        << e.what();
  }
  // An unnamed job's rows name its number; without results every job is read.
  EXPECT_EQ(read(csv, 1.0, 4, {"a", ""}).jobs, (std::vector<std::string>{"a", "", "c"}));
  EXPECT_EQ(read(csv, 1.0, 4).jobs, (std::vector<std::string>{"a", "c"}));
}

TEST(MemoryTimeline, JsonListsChangesOnly) {
  const auto t = read(std::string(sim_header) + "0.1,a,s,300\n2.2,a,return,0\n", 3.0, 6);
  const auto json = to_json(t);
  EXPECT_EQ(json["layers"][0]["changes"], nlohmann::json::parse("[0, 300, 5, 0]"));
  EXPECT_TRUE(json["held_total"].is_null());
}

}  // namespace
}  // namespace tandem::report
