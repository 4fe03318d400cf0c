#include "tandem/runtime/results.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "tandem/common/error.hpp"

namespace tandem::runtime {
namespace {

iteration_record iteration(double start, double end, double loss, std::size_t peak,
                           double requested) {
  iteration_record it;
  it.start_s = start;
  it.end_s = end;
  it.loss = loss;
  it.peak_bytes = peak;
  it.requested_s = requested;
  return it;
}

run_result sample() {
  run_result run;
  run.workload = "two_jobs.toml";
  run.policy = "spatial";
  run.device = "cpu";
  run.capacity_bytes = 2u << 30;
  run.budget_bytes = 1u << 30;
  run.makespan_s = 4;
  run.aggregate_samples_per_s = 100;
  run.peak_reserved_bytes = 512u << 20;
  job_result ok;
  ok.name = "resnet";
  ok.model = "resnet20";
  ok.batch_size = 32;
  ok.iterations = 2;
  ok.first_loss = 2.3;
  ok.last_loss = 0.4;
  ok.iteration_log = {iteration(0.1, 0.5, 2.3, 100, 0.05), iteration(0.5, 0.9, 0.4, 120, 0.5)};
  // The second ran under a plan, held up mid-way, after a first try that was cut short.
  auto& planned = ok.iteration_log[1];
  planned.plan = "tensile at 12.00 MiB";
  planned.traffic = {4096, 2048, 0.25};
  planned.memory_wait_s = 0.125;
  planned.group_wait_s = 0.0625;
  ok.restarts = 1;
  ok.restarted_attempts = {{0.5, 0.6}};
  job_result failed;
  failed.name = "lm";
  failed.model = "lstm";
  failed.status = job_status::failed;
  failed.out_of_memory = true;
  failed.error = "out of memory: job 'lm' asked for 64 MiB";
  run.jobs = {ok, failed};
  return run;
}

TEST(Results, JsonFollowsTheDocumentedSchema) {
  std::ostringstream out;
  write_json(sample(), out);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["schema_version"], results_schema_version);
  EXPECT_EQ(doc["policy"], "spatial");
  EXPECT_EQ(doc["budget_bytes"], 1u << 30);
  EXPECT_EQ(doc["failed_jobs"], 1);
  ASSERT_EQ(doc["jobs"].size(), 2u);
  const auto& ok = doc["jobs"][0];
  EXPECT_EQ(ok["status"], "completed");
  EXPECT_DOUBLE_EQ(ok["first_loss"].get<double>(), 2.3);
  ASSERT_EQ(ok["iteration_log"].size(), 2u);
  EXPECT_EQ(ok["iteration_log"][1]["peak_bytes"], 120);
  EXPECT_EQ(ok["iteration_log"][0]["requested_s"], 0.05);
  // What is 0 or empty is left out of an iteration's entry; the rest is there.
  for (const char* key : {"plan", "swapped_out_bytes", "swapped_in_bytes", "recompute_s",
                          "memory_wait_s", "group_wait_s"}) {
    EXPECT_FALSE(ok["iteration_log"][0].contains(key)) << key;
  }
  const auto& planned = ok["iteration_log"][1];
  EXPECT_EQ(planned["plan"], "tensile at 12.00 MiB");
  EXPECT_EQ(planned["swapped_out_bytes"], 4096);
  EXPECT_EQ(planned["swapped_in_bytes"], 2048);
  EXPECT_EQ(planned["recompute_s"], 0.25);
  EXPECT_EQ(planned["memory_wait_s"], 0.125);
  EXPECT_EQ(planned["group_wait_s"], 0.0625);
  EXPECT_EQ(ok["restarts"], 1);
  ASSERT_EQ(ok["restarted_attempts"].size(), 1u);
  EXPECT_EQ(ok["restarted_attempts"][0]["start_s"], 0.5);
  EXPECT_EQ(ok["restarted_attempts"][0]["end_s"], 0.6);
  EXPECT_TRUE(ok["unfinished_start_s"].is_null());
  const auto& lm = doc["jobs"][1];
  EXPECT_EQ(lm["status"], "failed");
  EXPECT_TRUE(lm["out_of_memory"].get<bool>());
  EXPECT_TRUE(lm["first_loss"].is_null());  // never trained: null, not a made-up number
}

TEST(Results, TableShowsEveryJobAndWhyOneFailed) {
  std::ostringstream out;
  print_table(sample(), out);
  const auto text = out.str();
  EXPECT_NE(text.find("resnet"), std::string::npos);
  EXPECT_NE(text.find("2.300 -> 0.400"), std::string::npos) << text;
  EXPECT_NE(text.find("job lm failed: out of memory"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 2 jobs failed"), std::string::npos) << text;
}

TEST(Results, PolicyStatisticsPrintCountsInFullRatiosToTwoPlacesAndUnitsByName) {
  auto run = sample();
  run.policy = "scrooge";
  run.jobs[0].policy_stats = {{"borrow_waits", 12345678},
                              {"stretch", 1.64957},
                              {"total_shift_s", 0.5},
                              {"effective_budget_bytes", 64.0 * (1u << 20)}};
  std::ostringstream out;
  print_table(run, out);
  EXPECT_NE(out.str().find("scrooge for resnet: borrow_waits 12345678, stretch 1.65, total_shift "
                           "0.500 s, effective_budget 64.00 MiB"),
            std::string::npos)
      << out.str();
}

TEST(Results, APlannedJobWithoutAPlannedIterationSaysWhy) {
  auto run = sample();
  run.jobs[0].footprint = footprint_result{};
  run.jobs[0].footprint->planner = "tensile";
  const auto table = [&] {
    std::ostringstream out;
    print_table(run, out);
    return out.str();
  };
  EXPECT_NE(table().find("resnet: no iteration ran under the plan (a planned job needs 5"),
            std::string::npos)
      << table();
  run.jobs[0].status = job_status::stopped;
  EXPECT_NE(table().find("resnet: no iteration ran under the plan (the job was stopped before "
                         "its first planned iteration)"),
            std::string::npos)
      << table();
}

TEST(Results, PercentilesAreNearestRank) {
  // 1..20 shuffled: the p-th percentile is the ceil(p/100 * 20)-th smallest.
  const std::vector<double> values{7,  3, 20, 1, 14, 9, 2,  18, 5,  11,
                                   16, 4, 13, 6, 19, 8, 12, 17, 10, 15};
  EXPECT_EQ(percentile(values, 50), 10.0);
  EXPECT_EQ(percentile(values, 95), 19.0);  // not 20: 95% of 20 is exactly 19 values
  EXPECT_EQ(percentile(values, 99), 20.0);
  EXPECT_EQ(percentile(values, 100), 20.0);
  EXPECT_EQ(percentile(values, 5), 1.0);
  EXPECT_EQ(percentile(values, 0), 1.0);
  EXPECT_EQ(percentile({4.5}, 50), 4.5);
  EXPECT_EQ(percentile({1, 2, 3}, 50), 2.0);
  EXPECT_EQ(percentile({1, 2, 3, 4}, 50), 2.0);  // a value of the set, never an interpolation
  EXPECT_THROW(static_cast<void>(percentile({}, 50)), usage_error);
  EXPECT_THROW(static_cast<void>(percentile({1}, 101)), usage_error);
  EXPECT_THROW(static_cast<void>(percentile({1}, -1)), usage_error);
}

TEST(Results, LatencySummariesCountAverageAndRank) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) values.push_back(i * 1e-3);
  const auto summary = summarize_latencies(values);
  EXPECT_EQ(summary.count, 100u);
  EXPECT_NEAR(summary.mean_s, 0.0505, 1e-12);
  EXPECT_DOUBLE_EQ(summary.p50_s, 0.050);
  EXPECT_DOUBLE_EQ(summary.p95_s, 0.095);
  EXPECT_DOUBLE_EQ(summary.p99_s, 0.099);
  EXPECT_DOUBLE_EQ(summary.max_s, 0.100);
  EXPECT_EQ(summarize_latencies({}), latency_summary{});
}

job_result finished_job(const char* name, double arrival, double setup, double first_start,
                        double end) {
  job_result job;
  job.name = name;
  job.arrival_s = arrival;
  job.setup_s = setup;
  job.first_start_s = first_start;
  job.end_s = end;
  return job;
}

TEST(Results, TableTwoMetricsCoverCompletedTrainingJobsOnly) {
  run_result run;
  // Queuing: first start - setup - arrival; completion: end - arrival.
  run.jobs.push_back(finished_job("a", 0, 1, 1, 10));      // queued 0, JCT 10
  run.jobs.push_back(finished_job("b", 2, 1, 7, 14));      // queued 4, JCT 12
  run.jobs.push_back(finished_job("c", 4, 0.5, 6.5, 24));  // queued 2, JCT 20
  auto failed = finished_job("d", 0, 1, 1, 3);
  failed.status = job_status::failed;
  run.jobs.push_back(failed);
  auto served = finished_job("e", 0, 1, 1, 100);
  served.kind = job_kind::inference;
  run.jobs.push_back(served);
  const auto metrics = completion_metrics_of(run);
  EXPECT_EQ(metrics.jobs, 3u);
  EXPECT_DOUBLE_EQ(metrics.mean_queuing_s, 2.0);
  EXPECT_DOUBLE_EQ(metrics.mean_jct_s, 14.0);
  EXPECT_DOUBLE_EQ(metrics.p95_jct_s, 20.0);

  EXPECT_EQ(completion_metrics_of(run_result{}).jobs, 0u);
  EXPECT_EQ(completion_metrics_of(run_result{}).mean_jct_s, 0.0);
}

run_result with_inference() {
  auto run = sample();
  run.jobs[0].arrival_s = 0.5;
  run.jobs[0].setup_s = 0.25;
  run.jobs[0].first_start_s = 1.0;
  run.jobs[0].end_s = 3.5;
  job_result served;
  served.name = "server";
  served.kind = job_kind::inference;
  served.model = "mlp";
  served.iterations = 4;
  served.latencies_s = {0.001, 0.004, 0.002, 0.003};
  served.latency = summarize_latencies(served.latencies_s);
  run.jobs.push_back(served);
  run.switches = summarize_latencies({0.0001, 0.0002, 0.0004});
  return run;
}

TEST(Results, JsonCarriesKindsLatenciesTableTwoMetricsAndSwitches) {
  std::ostringstream out;
  write_json(with_inference(), out);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["completed_training_jobs"], 1);
  EXPECT_DOUBLE_EQ(doc["mean_queuing_s"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(doc["mean_jct_s"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(doc["p95_jct_s"].get<double>(), 3.0);
  const auto& switches = doc["switches"];
  EXPECT_EQ(switches["count"], 3);
  EXPECT_DOUBLE_EQ(switches["p50_s"].get<double>(), 0.0002);
  EXPECT_DOUBLE_EQ(switches["p95_s"].get<double>(), 0.0004);
  EXPECT_DOUBLE_EQ(switches["max_s"].get<double>(), 0.0004);
  EXPECT_TRUE(switches.contains("mean_s"));
  EXPECT_TRUE(switches.contains("p99_s"));
  ASSERT_EQ(doc["jobs"].size(), 3u);
  EXPECT_EQ(doc["jobs"][0]["kind"], "training");
  EXPECT_TRUE(doc["jobs"][0]["latency"].is_null());
  const auto& server = doc["jobs"][2];
  EXPECT_EQ(server["kind"], "inference");
  EXPECT_TRUE(server["first_loss"].is_null());
  const auto& latency = server["latency"];
  EXPECT_EQ(latency["requests"], 4);
  EXPECT_DOUBLE_EQ(latency["mean_s"].get<double>(), 0.0025);
  EXPECT_DOUBLE_EQ(latency["p50_s"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(latency["p95_s"].get<double>(), 0.004);
  EXPECT_DOUBLE_EQ(latency["p99_s"].get<double>(), 0.004);
  EXPECT_DOUBLE_EQ(latency["max_s"].get<double>(), 0.004);
  EXPECT_FALSE(server.contains("latencies_s"));  // the raw latencies stay out of the JSON
}

TEST(Results, JsonHasNullsWhereNothingWasMeasured) {
  std::ostringstream out;
  run_result run;
  run.policy = "spatial";
  write_json(run, out);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["completed_training_jobs"], 0);
  EXPECT_TRUE(doc["mean_queuing_s"].is_null());
  EXPECT_TRUE(doc["mean_jct_s"].is_null());
  EXPECT_TRUE(doc["p95_jct_s"].is_null());
  EXPECT_EQ(doc["switches"]["count"], 0);
  EXPECT_TRUE(doc["switches"]["p50_s"].is_null());
}

TEST(Results, TableShowsLatenciesInMillisecondsTableTwoMetricsAndSwitches) {
  std::ostringstream out;
  print_table(with_inference(), out);
  const auto text = out.str();
  EXPECT_NE(text.find("p50 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("server                 4      2.50      2.00      4.00      4.00      4.00"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(inference)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 training job completed: mean queuing 0.25 s, mean JCT 3.00 s, p95 JCT "
                      "3.00 s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("3 job switches: p50 0.200 ms, p95 0.400 ms, max 0.400 ms"),
            std::string::npos)
      << text;
  // A run with neither leaves those lines out.
  std::ostringstream plain;
  print_table(run_result{}, plain);
  EXPECT_EQ(plain.str().find("inference"), std::string::npos) << plain.str();
  EXPECT_EQ(plain.str().find("job switch"), std::string::npos) << plain.str();
}

}  // namespace
}  // namespace tandem::runtime
