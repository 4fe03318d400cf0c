// The data a report page is built from, against golden files (what a reader sees is drawn from
// it alone), and the page around it: self-contained, and safe whatever the names in the data.
//
// The goldens are rewritten by running the test with TANDEM_UPDATE_GOLDEN=1; review the diff.

#include "tandem/report/report_data.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/report/html_report.hpp"

namespace tandem::report {
namespace {

const std::string fixtures = std::string(TANDEM_REPORT_TEST_DIR) + "/fixtures/";
const std::string goldens = std::string(TANDEM_REPORT_TEST_DIR) + "/golden/";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Compares `data` with the golden file `name`, or rewrites it under TANDEM_UPDATE_GOLDEN.
void expect_golden(const nlohmann::json& data, const std::string& name) {
  const auto path = goldens + name;
  if (std::getenv("TANDEM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << data.dump(1) << '\n';
    GTEST_SKIP() << "rewrote " << path;
  }
  const auto golden = read(path);
  ASSERT_FALSE(golden.empty()) << path << " is missing; run with TANDEM_UPDATE_GOLDEN=1";
  // Compared as JSON values: numbers read back exactly, so this is as strict as text.
  EXPECT_EQ(data, nlohmann::json::parse(golden))
      << "the report's data changed; if that is meant, rerun with TANDEM_UPDATE_GOLDEN=1 and "
         "review the diff of "
      << path;
}

report_request request(const std::string& results, const std::string& timeline = "") {
  report_request r;
  r.results = fixtures + results;
  if (!timeline.empty()) r.timeline = fixtures + timeline;
  r.buckets = 24;  // few enough to read the golden file
  return r;
}

TEST(ReportData, OfASimulatedRunMatchesItsGolden) {
  const auto data = load_report_data(request("sim_two_jobs.json", "sim_two_jobs.csv"));
  // Sources are the paths given: make them independent of where the tree is.
  auto stable = data;
  stable["source"] = "sim_two_jobs.json";
  expect_golden(stable, "sim_two_jobs.data.json");
}

TEST(ReportData, OfAComparisonMatchesItsGolden) {
  auto data = load_report_data(request("sim_compare.json"));
  data["source"] = "sim_compare.json";
  expect_golden(data, "sim_compare.data.json");
}

TEST(ReportData, OfARealRunMatchesItsGolden) {
  if (!std::ifstream(fixtures + "two_jobs_real.json")) {
    GTEST_SKIP() << "no real-run fixture yet: tests/report/fixtures/make_real_fixture.sh makes it "
                    "in a build with libtorch";
  }
  auto data = load_report_data(request("two_jobs_real.json", "two_jobs_real.csv"));
  data["source"] = "two_jobs_real.json";
  expect_golden(data, "two_jobs_real.data.json");
}

TEST(ReportData, KeepsEveryFieldOfTheResultsAndCodesTheIterations) {
  const auto results = nlohmann::json::parse(read(fixtures + "sim_two_jobs.json"));
  const auto data = load_report_data(request("sim_two_jobs.json"));
  EXPECT_EQ(data["kind"], "run");
  EXPECT_TRUE(data["memory"].is_null());
  for (const auto& [key, value] : results.items()) {
    if (key != "jobs") {
      EXPECT_EQ(data["system"][key], value) << key;
    }
  }
  ASSERT_EQ(data["jobs"].size(), results["jobs"].size());
  for (std::size_t j = 0; j < results["jobs"].size(); ++j) {
    const auto& job = results["jobs"][j];
    const auto& shown = data["jobs"][j];
    for (const auto& [key, value] : job.items()) {
      if (key != "iteration_log" && key != "restarted_attempts") {
        EXPECT_EQ(shown[key], value) << key;
      }
    }
    // The bars decode to the log's times, to the microsecond.
    const auto& bars = shown["bars"];
    ASSERT_EQ(bars.size(), 3 * job["iteration_log"].size());
    std::int64_t t = 0;
    for (std::size_t i = 0; i < job["iteration_log"].size(); ++i) {
      const auto& it = job["iteration_log"][i];
      t += bars[3 * i].get<std::int64_t>();
      EXPECT_NEAR(static_cast<double>(t) / 1e6, it["requested_s"].get<double>(), 1e-6);
      t += bars[3 * i + 1].get<std::int64_t>();
      EXPECT_NEAR(static_cast<double>(t) / 1e6, it["start_s"].get<double>(), 1e-6);
      t += bars[3 * i + 2].get<std::int64_t>();
      EXPECT_NEAR(static_cast<double>(t) / 1e6, it["end_s"].get<double>(), 1e-6);
    }
  }
}

TEST(ReportData, CodesPlansWaitsTrafficAndRestartsSparsely) {
  // Iterations 1 and 2 under one plan, 4 under another, 5 under the first again; 2 waited for
  // memory and 3 at a group boundary; one try was cut short before iteration 0.
  const auto results = R"({"schema_version": 1, "policy": "scrooge", "budget_bytes": 1,
      "makespan_s": 6, "aggregate_samples_per_s": 1, "peak_reserved_bytes": 1, "jobs": [{
      "name": "a", "status": "completed", "arrival_s": 0, "first_start_s": 0, "end_s": 6,
      "setup_s": 0, "samples_per_s": 1, "restarts": 1,
      "restarted_attempts": [{"start_s": 0.25, "end_s": 0.5}],
      "iteration_log": [
        {"start_s": 0.5, "end_s": 1, "requested_s": 0.5},
        {"start_s": 1, "end_s": 2, "requested_s": 1, "plan": "p at 1 MiB",
         "swapped_out_bytes": 100, "swapped_in_bytes": 100},
        {"start_s": 2, "end_s": 3, "requested_s": 2, "plan": "p at 1 MiB", "memory_wait_s": 0.5,
         "recompute_s": 0.125},
        {"start_s": 3, "end_s": 4, "requested_s": 3, "group_wait_s": 0.25},
        {"start_s": 4, "end_s": 5, "requested_s": 4, "plan": "p at 2 MiB"},
        {"start_s": 5, "end_s": 6, "requested_s": 5, "plan": "p at 1 MiB"}]}]})";
  const auto data = report_data(parse_results(results, "r.json"), nullptr);
  const auto& job = data["jobs"][0];
  EXPECT_EQ(job["plans"], nlohmann::json({"p at 1 MiB", "p at 2 MiB"}));
  // [first iteration, count, plan index, ...]
  EXPECT_EQ(job["plan_runs"], nlohmann::json({1, 2, 0, 4, 1, 1, 5, 1, 0}));
  // [iteration, memory us, group us, ...]
  EXPECT_EQ(job["waits"], nlohmann::json({2, 500000, 0, 3, 0, 250000}));
  // [iteration, bytes out, bytes in, recompute us, ...]
  EXPECT_EQ(job["traffic"], nlohmann::json({1, 100, 100, 0, 2, 0, 0, 125000}));
  EXPECT_EQ(job["restarted"], nlohmann::json({250000, 500000}));
  EXPECT_FALSE(job.contains("restarted_attempts"));
}

TEST(ReportData, ComparisonRatiosAreAgainstTheFirstPolicyOfTheBatch) {
  const auto data = load_report_data(request("sim_compare.json"));
  ASSERT_EQ(data["rows"].size(), 2u);
  const auto& first = data["rows"][0];
  const auto& second = data["rows"][1];
  EXPECT_EQ(first["policy"], "temporal");
  EXPECT_EQ(first["batch"], "file");  // the two jobs' batches differ
  EXPECT_EQ(first["ratio"], 1.0);
  EXPECT_DOUBLE_EQ(second["ratio"].get<double>(),
                   second["aggregate_samples_per_s"].get<double>() /
                       first["aggregate_samples_per_s"].get<double>());
}

TEST(ReportData, MaxbatchRowsNameTheSweptOption) {
  const auto search = R"({"workload": "w.toml", "job": "a", "model": "resnet50", "jobs": 2,
      "iterations": 3, "simulated": true, "planner": null, "plan_budget": null,
      "device": "simulated V100", "budget_bytes": 1000,
      "solo": {"max_batch": 334, "no_failure_found": false, "samples_per_s": 363.0, "probes": 12,
               "policy": "exclusive"},
      "colocated": [
        {"policy": "scrooge", "policy_options": {"ramp_start": 0.6, "claim_margin": 1},
         "max_batch": 300, "no_failure_found": false, "samples_per_s": 350.5, "probes": 9,
         "ratio_percent": 89.8},
        {"policy": "scrooge", "policy_options": {"ramp_start": 0.8, "claim_margin": 1},
         "max_batch": 334, "no_failure_found": true, "samples_per_s": 363.0, "probes": 9,
         "ratio_percent": 100.0}]})";
  const auto data = report_data(parse_results(search, "search.json"), nullptr);
  EXPECT_EQ(data["kind"], "maxbatch");
  EXPECT_EQ(data["rows"][0]["label"], "scrooge ramp_start=0.6");
  EXPECT_EQ(data["rows"][1]["label"], "scrooge ramp_start=0.8");
  EXPECT_EQ(data["rows"][1]["no_failure_found"], true);
  EXPECT_EQ(data["solo"]["max_batch"], 334);
}

TEST(ResultsDocument, SaysWhatIsWrongWithBadInput) {
  const auto message = [](const std::string& text) {
    try {
      static_cast<void>(parse_results(text, "r.json"));
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("{oops").find("'r.json': it is not JSON: parse error"), std::string::npos);
  EXPECT_NE(message("[]").find("an empty array"), std::string::npos);
  EXPECT_NE(message(R"({"a": 1})").find("it is JSON but not results"), std::string::npos);
  EXPECT_NE(message(R"({"jobs": []})").find("has no field 'schema_version'"), std::string::npos);
  EXPECT_NE(message(R"({"solo": {}, "colocated": []})").find("has no field 'workload'"),
            std::string::npos);
  const std::string run =
      R"({"schema_version": 1, "policy": "p", "budget_bytes": 1, "makespan_s": 1,
          "aggregate_samples_per_s": 1, "peak_reserved_bytes": 1, "jobs": [JOB]})";
  const auto with_job = [&](const std::string& job) {
    return std::string(run).replace(run.find("JOB"), 3, job);
  };
  EXPECT_NE(message(with_job(R"({"name": "a"})")).find("job 0 has no field 'status'"),
            std::string::npos);
  EXPECT_NE(message(with_job(R"({"name": "a", "status": "completed", "arrival_s": 0,
      "first_start_s": 0, "end_s": 1, "setup_s": 0, "samples_per_s": 1,
      "iteration_log": [{"start_s": "soon"}]})"))
                .find("has no numbers 'start_s' and 'end_s'"),
            std::string::npos);
  EXPECT_NE(message(with_job(R"({"name": "a", "status": "completed", "arrival_s": 0,
      "first_start_s": 0, "end_s": "late", "setup_s": 0, "samples_per_s": 1,
      "iteration_log": []})"))
                .find("job 0: 'end_s' is string, not a number (\"late\")"),
            std::string::npos);
  const std::string search =
      R"({"workload": "w.toml", "model": "m", "jobs": 2, "iterations": ITERATIONS,
          "device": "d", "budget_bytes": 1, "solo": {"max_batch": 4, "samples_per_s": null},
          "colocated": []})";
  const auto with_iterations = [&](const std::string& iterations) {
    return std::string(search).replace(search.find("ITERATIONS"), 10, iterations);
  };
  EXPECT_EQ(message(with_iterations("3")), "accepted");  // null: a rate not measured
  // A field the page reads that is of another type than tandem writes: an error naming the
  // file, not the JSON library's exception.
  const auto data_message = [](const std::string& text) {
    try {
      static_cast<void>(report_data(parse_results(text, "r.json"), nullptr));
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  auto bad_row = with_iterations("3");
  bad_row.replace(bad_row.find("\"colocated\": []"), 15,
                  R"("colocated": [{"policy": 7, "max_batch": 4, "samples_per_s": 1}])");
  EXPECT_NE(data_message(bad_row).find("cannot make a report of 'r.json': a field is not what "
                                       "tandem writes"),
            std::string::npos)
      << data_message(bad_row);
  EXPECT_NE(message(with_iterations("\"three\"")).find("'iterations' is string, not a number"),
            std::string::npos);
}

TEST(HtmlReport, IsSelfContained) {
  const auto page = render_html(load_report_data(request("sim_two_jobs.json", "sim_two_jobs.csv")));
  // Nothing is fetched: no link, no external script or image; the one URL is SVG's namespace.
  EXPECT_EQ(page.find("https://"), std::string::npos);
  std::size_t at = 0;
  while ((at = page.find("http://", at)) != std::string::npos) {
    EXPECT_EQ(page.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << page.substr(at, 60);
    ++at;
  }
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find(" src="), std::string::npos);
}

TEST(HtmlReport, NamesCannotBreakOutOfThePage) {
  auto results = nlohmann::json::parse(read(fixtures + "sim_two_jobs.json"));
  results["workload"] = "<b>{{script}}</b>";
  results["jobs"][0]["name"] = "</script><script>alert(1)</script>{{data}}";
  const auto data = report_data(parse_results(results.dump(), "x.json"), nullptr);
  const auto page = render_html(data);
  const auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = page.find(what); at != std::string::npos; at = page.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("</script>"), 3u);  // the template's own three
  EXPECT_NE(page.find("<title>&lt;b&gt;{{script}}&lt;/b&gt; - tandem report</title>"),
            std::string::npos);
  // The data reads back as it was.
  const auto begin = page.find("id=\"report-data\">") + 17;
  const auto end = page.find("</script>", begin);
  EXPECT_EQ(nlohmann::json::parse(page.substr(begin, end - begin)), data);
}

}  // namespace
}  // namespace tandem::report
