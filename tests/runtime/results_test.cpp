#include "tandem/runtime/results.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace tandem::runtime {
namespace {

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
  ok.iteration_log = {{0.1, 0.5, 2.3, 100}, {0.5, 0.9, 0.4, 120}};
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

}  // namespace
}  // namespace tandem::runtime
