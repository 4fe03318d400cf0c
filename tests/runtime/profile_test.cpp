// tandem profile's core: each job trained alone with its last iteration recorded in detail, and
// the JSON that carries it.

#include "tandem/runtime/profile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tandem/common/error.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/runtime/session.hpp"

namespace tandem::runtime {
namespace {

workload two_mlps() {
  const std::string text =
      "[device]\nkind = \"cpu\"\ncapacity = \"512MiB\"\nbudget = \"128MiB\"\n"
      "region_size = \"2MiB\"\n[policy]\nname = \"spatial\"\n"
      "[[job]]\nname = \"a\"\nmodel = \"mlp\"\nbatch_size = 16\niterations = 50\n"
      "[job.model_options]\nimage_side = 16\n"
      "[[job]]\nname = \"b\"\nmodel = \"mlp\"\nbatch_size = 32\nduration = \"30s\"\n"
      "arrival = \"5s\"\n[job.model_options]\nimage_side = 16\nhidden = 64\n";
  return parse_workload(text, "two.toml", training_vocabulary());
}

TEST(Profile, EachJobAloneForTheIterationsAskedWithItsLastIterationInDetail) {
  const auto profiles = profile_workload(two_mlps(), 3);
  ASSERT_EQ(profiles.jobs.size(), 2u);
  EXPECT_EQ(profiles.region_size, 2u << 20);
  for (const auto& job : profiles.jobs) {
    ASSERT_TRUE(job.completed) << job.name << ": " << job.error;
    EXPECT_EQ(job.iteration_s.size(), 3u);  // not the workload's 50 iterations or 30 s
    EXPECT_GT(job.persistent_bytes, 0u);
    EXPECT_GT(job.peak_live_bytes, job.persistent_bytes);
    ASSERT_TRUE(job.last_iteration.has_value());
    const auto& steps = job.last_iteration->allocations;
    ASSERT_FALSE(steps.empty());
    // Times are relative to the iteration's start, in order; an iteration frees what it makes.
    std::int64_t balance = 0;
    std::int64_t most = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      EXPECT_GE(steps[i].at_s, 0.0);
      if (i > 0) {
        EXPECT_GE(steps[i].at_s, steps[i - 1].at_s);
      }
      balance += steps[i].delta_bytes;
      most = std::max(most, balance);
    }
    EXPECT_EQ(balance, 0) << job.name;
    EXPECT_GT(most, 0);
    EXPECT_GE(job.last_iteration->held.duration_s, 0.0);
  }
  EXPECT_EQ(profiles.jobs[1].batch_size, 32);
}

TEST(Profile, TheJsonCarriesEveryField) {
  const auto profiles = profile_workload(two_mlps(), 2);
  std::ostringstream out;
  write_profile_json(profiles, out);
  const auto document = nlohmann::json::parse(out.str());
  EXPECT_EQ(document["schema_version"], profile_schema_version);
  EXPECT_EQ(document["workload"], "two.toml");
  ASSERT_EQ(document["jobs"].size(), 2u);
  const auto& job = document["jobs"][0];
  EXPECT_EQ(job["name"], "a");
  EXPECT_EQ(job["status"], "completed");
  EXPECT_EQ(job["iteration_s"].size(), 2u);
  const auto& allocations = job["last_iteration"]["allocations"];
  ASSERT_EQ(allocations.size(), profiles.jobs[0].last_iteration->allocations.size());
  EXPECT_EQ(allocations[0].size(), 3u);  // [time_s, delta_bytes, kind]
  EXPECT_TRUE(allocations[0][2].is_string());
  EXPECT_TRUE(job["last_iteration"]["held"].contains("steps"));
  const auto& operations = job["last_iteration"]["operations"];
  ASSERT_EQ(operations.size(), profiles.jobs[0].last_iteration->operations.size());
  ASSERT_FALSE(operations.empty());
  EXPECT_TRUE(operations[0][0].is_string());  // [name, start_s, duration_s]
  EXPECT_GE(document["cores"].get<unsigned>(), 1u);
  std::istringstream in(out.str());
  EXPECT_EQ(read_profile_json(in, "profiles.json"), profiles);  // a real profile reads back
}

workload one_job(const std::string& model, int batch_size, const std::string& model_options) {
  const std::string text =
      "[device]\nkind = \"cpu\"\ncapacity = \"1GiB\"\nbudget = \"512MiB\"\n"
      "[policy]\nname = \"exclusive\"\n[[job]]\nname = \"j\"\nmodel = \"" +
      model + "\"\nbatch_size = " + std::to_string(batch_size) +
      "\niterations = 2\n[job.model_options]\n" + model_options;
  return parse_workload(text, "one.toml", training_vocabulary());
}

bool any_name_contains(const std::vector<operation_record>& ops,
                       std::initializer_list<const char*> parts) {
  return std::any_of(ops.begin(), ops.end(), [&](const operation_record& op) {
    return std::any_of(parts.begin(), parts.end(),
                       [&](const char* part) { return op.name.find(part) != std::string::npos; });
  });
}

void print_sample(const std::string& model, const std::vector<operation_record>& ops,
                  double coverage) {
  std::cout << model << ": " << ops.size() << " operations, covering " << coverage * 100
            << "% of the iteration; the first ones:";
  for (std::size_t i = 0; i < std::min<std::size_t>(ops.size(), 12); ++i)
    std::cout << ' ' << ops[i].name;
  std::cout << '\n';
}

TEST(Profile, TheLastIterationRecordsItsTopLevelOperationsForwardAndBackward) {
  const std::map<std::string, workload> jobs{
      {"mlp", one_job("mlp", 16, "image_side = 16\n")},
      {"resnet20", one_job("resnet20", 4, "image_side = 16\n")}};
  for (const auto& [model, spec] : jobs) {
    const auto profiles = profile_workload(spec, 2);
    const auto& job = profiles.jobs.front();
    ASSERT_TRUE(job.completed) << model << ": " << job.error;
    const auto& detail = *job.last_iteration;
    const auto& ops = detail.operations;
    ASSERT_FALSE(ops.empty()) << model;
    const double iteration = detail.held.duration_s;
    constexpr double tolerance = 1e-3;
    double busy = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      EXPECT_GE(ops[i].start_s, 0.0) << ops[i].name;
      EXPECT_GE(ops[i].duration_s, 0.0) << ops[i].name;
      EXPECT_LE(ops[i].start_s + ops[i].duration_s, iteration + tolerance) << ops[i].name;
      // Top-level operations of one thread follow each other: nested calls are not counted.
      if (i > 0) {
        EXPECT_GE(ops[i].start_s, ops[i - 1].start_s + ops[i - 1].duration_s - 1e-9)
            << ops[i - 1].name << " then " << ops[i].name;
      }
      busy += ops[i].duration_s;
    }
    EXPECT_LE(busy, iteration + tolerance) << model;
    EXPECT_GE(busy / iteration, 0.3) << model;  // measured: see the printed coverage
    EXPECT_TRUE(any_name_contains(ops, {"linear", "addmm", "conv"})) << model;
    EXPECT_TRUE(any_name_contains(ops, {"Backward"})) << model;
    EXPECT_FALSE(any_name_contains(ops, {"aten::convolution_backward", "aten::mm"}))
        << model << ": nested calls recorded as operations of their own";
    EXPECT_FALSE(any_name_contains(ops, {"evaluate_function"})) << "named after the node";
    print_sample(model, ops, busy / iteration);
  }
}

TEST(Profile, ATrainingJobsLastIterationIsAlsoATensorAccessSequence) {
  const auto profiles = profile_workload(one_job("resnet20", 8, "image_side = 32\n"), 2);
  const auto& job = profiles.jobs.front();
  ASSERT_TRUE(job.completed) << job.error;
  ASSERT_TRUE(job.sequence.has_value());
  const auto& sequence = *job.sequence;
  EXPECT_NO_THROW(footprint::validate(sequence));
  EXPECT_EQ(sequence.model, "resnet20");
  EXPECT_EQ(sequence.batch_size, 8);
  std::map<footprint::phase, int> ops;
  for (const auto& op : sequence.operations) ++ops[op.where];
  EXPECT_GT(ops[footprint::phase::forward], 20);
  EXPECT_GT(ops[footprint::phase::backward], 20);
  EXPECT_GT(ops[footprint::phase::optimizer], 0);
  // Parameters and the optimizer's state are named after the module's parameters.
  std::map<footprint::tensor_role, int> named;
  for (const auto& t : sequence.tensors) {
    if (t.name == "stem.weight" || t.name == "stem.weight.momentum_buffer") ++named[t.role];
  }
  EXPECT_EQ(named[footprint::tensor_role::parameter], 1);
  EXPECT_EQ(named[footprint::tensor_role::optimizer_state], 1);
  // The cost model's vanilla peak is the pool's.
  const auto vanilla = footprint::predict(sequence, footprint::plan{});
  EXPECT_NEAR(static_cast<double>(vanilla.peak_bytes), static_cast<double>(job.peak_live_bytes),
              0.05 * static_cast<double>(job.peak_live_bytes));
  // It goes into the profile's JSON and reads back equal.
  std::ostringstream out;
  write_profile_json(profiles, out);
  std::istringstream in(out.str());
  EXPECT_EQ(read_profile_json(in, "profiles.json").jobs.front().sequence, job.sequence);
}

TEST(Profile, FewerThanTwoIterationsIsRefused) {
  EXPECT_THROW((void)profile_workload(two_mlps(), 1), config_error);
}

}  // namespace
}  // namespace tandem::runtime
