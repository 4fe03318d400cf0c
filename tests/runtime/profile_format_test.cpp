// Profiles read back: what write_profile_json writes reads back equal, and malformed input is
// refused with a message that names the field.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tandem/common/error.hpp"
#include "tandem/runtime/profile.hpp"

namespace tandem::runtime {
namespace {

profile_set sample() {
  profile_set profiles;
  profiles.workload = "w.toml";
  profiles.device = "cpu (2 threads)";
  profiles.region_size = 2u << 20;
  profiles.cores = 2;
  job_profile done;
  done.name = "a";
  done.model = "mlp";
  done.batch_size = 16;
  done.threads = 2;
  done.completed = true;
  done.setup_s = 0.012345678901234567;
  done.iteration_s = {0.1, 1.0 / 3.0, 2e-7};
  done.persistent_bytes = 123456;
  done.peak_live_bytes = 1u << 20;
  done.peak_reserved_bytes = 4u << 20;
  iteration_detail detail;
  detail.allocations = {{0.0, 4096, memory::alloc_kind::feature_map},
                        {1e-5, -4096, memory::alloc_kind::feature_map},
                        {0.2, 512, memory::alloc_kind::temporary}};
  detail.held = {2u << 20, {{0.001, 2 << 20}, {0.3, -(2 << 20)}}, 0.31};
  detail.operations = {{"aten::linear", 0.0001, 0.01},
                       {"autograd::engine::evaluate_function: AddmmBackward0", 0.02, 0.03}};
  done.last_iteration = detail;
  footprint::access_sequence sequence;
  sequence.model = "mlp";
  sequence.batch_size = 16;
  sequence.other_bytes = 512;
  sequence.operations = {{"aten::linear", footprint::phase::forward, footprint::op_kind::matmul,
                          0.0001, 0.01, false, true, std::nullopt},
                         {"AddmmBackward0", footprint::phase::backward, footprint::op_kind::matmul,
                          0.02, 0.03, false, false, 2048},
                         {"aten::add_", footprint::phase::optimizer, footprint::op_kind::optimizer,
                          0.06, 1.0 / 3.0, false, false, 0}};
  sequence.tensors = {{"fc.weight",
                       4096,
                       footprint::tensor_role::parameter,
                       std::nullopt,
                       {0, 1, 2},
                       std::nullopt,
                       std::nullopt},
                      {"t1", 8192, footprint::tensor_role::activation, 0, {1}, std::nullopt, 0},
                      {"t2", 4096, footprint::tensor_role::gradient, 1, {2}, 2, 1}};
  done.sequence = sequence;
  job_profile failed;
  failed.name = "b";
  failed.model = "resnet50";
  failed.batch_size = 64;
  failed.error = "out of memory";
  job_profile stopped;  // profiling interrupted (Ctrl-C) during this job
  stopped.name = "c";
  stopped.model = "mlp";
  stopped.batch_size = 16;
  stopped.stopped = true;
  stopped.error = "stopped after 1 of 5 iterations";
  stopped.iteration_s = {0.1};
  profiles.jobs = {done, failed, stopped};
  return profiles;
}

nlohmann::json sample_json() {
  std::ostringstream out;
  write_profile_json(sample(), out);
  return nlohmann::json::parse(out.str());
}

profile_set read(const std::string& text) {
  std::istringstream in(text);
  return read_profile_json(in, "p.json");
}

/// The message of the config_error reading `text` throws ("" when it throws none).
std::string error_of(const std::string& text) {
  try {
    (void)read(text);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

/// The message for the sample with one change.
std::string error_after(const std::function<void(nlohmann::json&)>& change) {
  auto document = sample_json();
  change(document);
  return error_of(document.dump());
}

#define EXPECT_MENTIONS(message, part) \
  EXPECT_NE((message).find(part), std::string::npos) << "no '" << (part) << "' in: " << (message)

TEST(ProfileFormat, WhatIsWrittenReadsBackEqual) {
  const auto profiles = sample();
  std::ostringstream out;
  write_profile_json(profiles, out);
  EXPECT_EQ(read(out.str()), profiles);
  auto changed = profiles;
  changed.jobs[0].last_iteration->operations[1].duration_s = 0.031;
  EXPECT_FALSE(read(out.str()) == changed);  // the comparison sees operations
}

TEST(ProfileFormat, TheAccessSequenceIsTheFootprintDocumentEmbedded) {
  const auto document = sample_json();
  ASSERT_TRUE(document["jobs"][0]["sequence"].is_object());
  // The object write_access_sequence_json writes, as it writes it.
  std::ostringstream alone;
  footprint::write_access_sequence_json(*sample().jobs[0].sequence, alone);
  EXPECT_EQ(document["jobs"][0]["sequence"], nlohmann::json::parse(alone.str()));
  EXPECT_TRUE(document["jobs"][1]["sequence"].is_null());  // failed: none
  EXPECT_EQ(read(document.dump()).jobs[0].sequence, sample().jobs[0].sequence);
}

TEST(ProfileFormat, AVersion2ProfileStillReadsWithoutSequences) {
  auto document = sample_json();
  document["schema_version"] = 2;
  for (auto& job : document["jobs"]) job.erase("sequence");
  auto expected = sample();
  for (auto& job : expected.jobs) job.sequence.reset();
  EXPECT_EQ(read(document.dump()), expected);
  // Version 3 has the field, null or not.
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0].erase("sequence"); }),
                  "jobs[0].sequence: missing");
}

TEST(ProfileFormat, AMalformedSequenceIsNamedInsideTheProfile) {
  const auto message =
      error_after([](auto& d) { d["jobs"][0]["sequence"]["tensors"][1]["bytes"] = "many"; });
  EXPECT_MENTIONS(message, "p.json: jobs[0].sequence");
  EXPECT_MENTIONS(message, "tensors[1].bytes: expected a whole number");
  // One that contradicts itself: read before it is made.
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["sequence"]["tensors"][2]["read_by"] = {0}; }),
      "p.json: jobs[0].sequence");
}

TEST(ProfileFormat, LoadProfileReadsAFileAndNamesOneItCannotRead) {
  const auto path = std::filesystem::path(testing::TempDir()) / "tandem_profile_format_test.json";
  {
    std::ofstream out(path);
    write_profile_json(sample(), out);
  }
  EXPECT_EQ(load_profile(path), sample());
  std::filesystem::remove(path);
  try {
    (void)load_profile(path);
    ADD_FAILURE() << "a missing file was read";
  } catch (const config_error& e) {
    EXPECT_MENTIONS(std::string(e.what()), path.string());
    EXPECT_MENTIONS(std::string(e.what()), "tandem profile");
  }
  EXPECT_THROW((void)load_profile(testing::TempDir()), config_error);  // a folder
}

TEST(ProfileFormat, InvalidJsonIsRefusedWithItsPosition) {
  const auto message = error_of("{\"schema_version\": 2,\n \"jobs\": [}");
  EXPECT_MENTIONS(message, "p.json: not valid JSON");
  EXPECT_MENTIONS(message, "line 2");
  EXPECT_MENTIONS(error_of(""), "not valid JSON");
  EXPECT_MENTIONS(error_of("{\"schema_version\": 2, \"region_size\": 1e400}"), "1e400");
  EXPECT_MENTIONS(error_of("[1, 2]"), "the document: expected an object");
}

TEST(ProfileFormat, AnotherSchemaVersionIsRefusedSayingWhichAndWhatToDo) {
  const auto message = error_after([](auto& d) { d["schema_version"] = 1; });
  EXPECT_MENTIONS(message, "schema version 1");
  EXPECT_MENTIONS(message, "reads versions 2 to " + std::to_string(profile_schema_version));
  EXPECT_MENTIONS(message, "re-run `tandem profile");
  EXPECT_MENTIONS(error_after([](auto& d) { d["schema_version"] = profile_schema_version + 1; }),
                  "schema version " + std::to_string(profile_schema_version + 1));
  EXPECT_MENTIONS(error_after([](auto& d) { d.erase("schema_version"); }),
                  "schema_version: missing");
  EXPECT_MENTIONS(error_after([](auto& d) { d["schema_version"] = "2"; }),
                  "schema_version: expected a whole number, got \"2\"");
}

TEST(ProfileFormat, MissingFieldsAreNamed) {
  EXPECT_MENTIONS(error_after([](auto& d) { d.erase("cores"); }), "p.json: cores: missing");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][1].erase("setup_s"); }),
                  "jobs[1].setup_s: missing");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["last_iteration"].erase("operations"); }),
                  "jobs[0].last_iteration.operations: missing");
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["last_iteration"]["held"].erase("duration_s"); }),
      "jobs[0].last_iteration.held.duration_s: missing");
}

TEST(ProfileFormat, WrongTypesAreNamedWithWhatWasExpected) {
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"] = 3; }), "jobs: expected an array, got 3");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0] = "a"; }), "jobs[0]: expected an object");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["name"] = 1; }),
                  "jobs[0].name: expected a string");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["iteration_s"][1] = "fast"; }),
                  "jobs[0].iteration_s[1]: expected a number of seconds");
  EXPECT_MENTIONS(error_after([](auto& d) { d["region_size"] = 2.5; }),
                  "region_size: expected a whole number >= 0, got 2.5");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["status"] = "done"; }),
                  "jobs[0].status: expected \"completed\", \"failed\" or \"stopped\"");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["last_iteration"] = 0; }),
                  "jobs[0].last_iteration: expected an object");
}

TEST(ProfileFormat, MalformedStepsAndOperationsAreNamedWithTheirShape) {
  EXPECT_MENTIONS(error_after([](auto& d) {
                    d["jobs"][0]["last_iteration"]["allocations"][2] = {0.1, 8};
                  }),
                  "jobs[0].last_iteration.allocations[2]: expected [time_s, delta_bytes, kind]");
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["last_iteration"]["allocations"][1][2] = "huge"; }),
      "jobs[0].last_iteration.allocations[1][2]: expected an allocation kind");
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["last_iteration"]["allocations"][0][1] = 1.5; }),
      "jobs[0].last_iteration.allocations[0][1]: expected a whole number of bytes");
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["last_iteration"]["held"]["steps"][0] = 5; }),
      "jobs[0].last_iteration.held.steps[0]: expected [time_s, delta_bytes]");
  EXPECT_MENTIONS(error_after([](auto& d) {
                    d["jobs"][0]["last_iteration"]["operations"][1] = {"x", 0.1};
                  }),
                  "jobs[0].last_iteration.operations[1]: expected [name, start_s, duration_s]");
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["last_iteration"]["operations"][0][0] = 7; }),
      "jobs[0].last_iteration.operations[0][0]: expected a string");
}

TEST(ProfileFormat, NegativeValuesAreRefusedWhereTheyMeanNothing) {
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["persistent_bytes"] = -1; }),
                  "jobs[0].persistent_bytes: expected a whole number >= 0, got -1");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["setup_s"] = -0.5; }),
                  "jobs[0].setup_s: expected a number of seconds >= 0");
  EXPECT_MENTIONS(error_after([](auto& d) { d["jobs"][0]["batch_size"] = 0; }),
                  "jobs[0].batch_size: expected a whole number >= 1");
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["last_iteration"]["operations"][0][2] = -1; }),
      "jobs[0].last_iteration.operations[0][2]: expected a number of seconds >= 0");
  EXPECT_MENTIONS(
      error_after([](auto& d) { d["jobs"][0]["last_iteration"]["held"]["held_at_start"] = -8; }),
      "jobs[0].last_iteration.held.held_at_start: expected a whole number >= 0");
  EXPECT_MENTIONS(error_after([](auto& d) { d["cores"] = 1ull << 40; }),
                  "cores: expected a whole number >= 0");
  // Frees are negative deltas: allowed.
  EXPECT_EQ(read(sample_json().dump()).jobs[0].last_iteration->allocations[1].delta_bytes, -4096);
}

TEST(ProfileFormat, EveryMessageSaysWhatToDo) {
  const auto message = error_after([](auto& d) { d["jobs"][0].erase("model"); });
  EXPECT_MENTIONS(message, "p.json: jobs[0].model: missing");
  EXPECT_MENTIONS(message, "docs/profile-format.md");
  EXPECT_MENTIONS(message, "re-run `tandem profile");
}

}  // namespace
}  // namespace tandem::runtime
