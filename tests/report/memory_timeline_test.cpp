// The memory timeline's buckets (Note [Timeline buckets] in memory_timeline.hpp): each bucket is
// one true state of every job, at the moment the jobs' sum was highest; nothing is averaged.

#include "tandem/report/memory_timeline.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tandem/common/csv.hpp"
#include "tandem/common/error.hpp"

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

TEST(MemoryTimeline, JsonListsChangesOnly) {
  const auto t = read(std::string(sim_header) + "0.1,a,s,300\n2.2,a,return,0\n", 3.0, 6);
  const auto json = to_json(t);
  EXPECT_EQ(json["layers"][0]["changes"], nlohmann::json::parse("[0, 300, 5, 0]"));
  EXPECT_TRUE(json["held_total"].is_null());
}

}  // namespace
}  // namespace tandem::report
