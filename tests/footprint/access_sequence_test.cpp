// Access sequences: their queries, their validation (every refusal names the tensor or operation)
// and their JSON, which reads back equal and refuses malformed input naming the field.

#include "tandem/footprint/access_sequence.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"

namespace tandem::footprint {
namespace {

using testing::sequence_builder;

/// conv (reads w, makes a) -> relu (reads a, makes b) -> backward (reads a and b).
access_sequence tiny() {
  sequence_builder b("tiny");
  const auto conv = b.op("conv", 1.0, phase::forward, op_kind::convolution);
  const auto relu = b.op("relu", 0.5, phase::forward, op_kind::elementwise, 0.25);
  const auto back = b.op("relu.backward", 2.0, phase::backward, op_kind::elementwise);
  b.tensor("w", 100, std::nullopt, {conv});
  b.tensor("a", 10, conv, {relu, back});
  b.tensor("b", 20, relu, {back});
  b.tensor("scratch", 5, conv, {}, tensor_role::temporary);
  b.tensor("g", 7, back, {}, tensor_role::gradient, back);
  b.other_bytes(1000);
  auto s = b.get();
  s.batch_size = 32;
  s.operations[1].random = true;
  return s;
}

void expect_refused(const access_sequence& s, const std::string& fragment) {
  try {
    validate(s);
    FAIL() << "accepted a sequence that should be refused for: " << fragment;
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(AccessSequence, NamesItsEnumerators) {
  EXPECT_EQ(to_string(phase::backward), "backward");
  EXPECT_EQ(to_string(tensor_role::optimizer_state), "optimizer_state");
  EXPECT_EQ(to_string(op_kind::normalization), "normalization");
  EXPECT_EQ(to_string(op_kind::optimizer), "optimizer");
}

TEST(AccessSequence, AnswersItsQueries) {
  const auto s = tiny();
  EXPECT_DOUBLE_EQ(s.iteration_s(), 3.75);
  EXPECT_EQ(s.inputs_of(0), (std::vector<std::size_t>{0}));
  EXPECT_EQ(s.inputs_of(2), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(s.outputs_of(0), (std::vector<std::size_t>{1, 3}));
  // Scratch: made and released by one operation, read by none after it.
  EXPECT_TRUE(s.is_scratch(3));
  EXPECT_TRUE(s.is_scratch(4));
  EXPECT_FALSE(s.is_scratch(0));
  EXPECT_FALSE(s.is_scratch(1));
  EXPECT_EQ(s.scratch_bytes_by_op(), (std::vector<std::size_t>{5, 0, 7}));
  auto measured = s;
  measured.operations[0].scratch_peak_bytes = 3;   // held at most 3 of the 5 at once
  measured.operations[2].scratch_peak_bytes = 70;  // never more than their sum
  EXPECT_EQ(measured.scratch_bytes_by_op(), (std::vector<std::size_t>{3, 0, 7}));
  EXPECT_EQ(s.outputs_of(2), (std::vector<std::size_t>{4}));
  EXPECT_EQ(s.release_op(0), std::nullopt);  // a parameter stays
  EXPECT_EQ(s.release_op(1), 2u);            // after its last reader
  EXPECT_EQ(s.release_op(3), 0u);            // never read: after its creation
  EXPECT_EQ(s.release_op(4), 2u);            // freed_after
  EXPECT_EQ(s.access_op(1, 0), 0u);
  EXPECT_EQ(s.access_op(1, 2), 2u);
  EXPECT_EQ(s.access_op(0, 0), std::nullopt);
  EXPECT_THROW((void)s.access_op(1, 3), usage_error);
  EXPECT_NO_THROW(validate(s));
  EXPECT_DOUBLE_EQ(access_sequence{}.iteration_s(), 0);
}

TEST(AccessSequence, WithDurationsKeepsTheIdleTimeBeforeEachOperation) {
  auto s = tiny();  // conv 0-1, relu 1.25-1.75, backward 1.75-3.75: 0.25 s idle before relu
  s.operations[0].start_s = 0.5;  // and 0.5 s before conv
  s.operations[1].start_s = 1.75;
  s.operations[2].start_s = 2.25;
  const std::vector<double> measured{2.0, 0.25, 1.0};
  const auto retimed = s.with_durations(measured);
  ASSERT_EQ(retimed.operations.size(), 3u);
  EXPECT_DOUBLE_EQ(retimed.operations[0].start_s, 0.5);
  EXPECT_DOUBLE_EQ(retimed.operations[1].start_s, 2.75);  // 0.5 + 2.0, then 0.25 idle
  EXPECT_DOUBLE_EQ(retimed.operations[2].start_s, 3.0);   // right after relu, as recorded
  for (std::size_t op = 0; op < 3; ++op)
    EXPECT_DOUBLE_EQ(retimed.operations[op].duration_s, measured[op]);
  EXPECT_DOUBLE_EQ(retimed.iteration_s(), 4.0);
  EXPECT_EQ(retimed.tensors, s.tensors);  // only the times change
  EXPECT_NO_THROW(validate(retimed));
  EXPECT_EQ(s.with_durations(std::vector<double>{1.0, 0.5, 2.0}), s);  // its own times
  EXPECT_THROW((void)s.with_durations(std::vector<double>{1.0, 0.5}), usage_error);
  EXPECT_THROW((void)s.with_durations(std::vector<double>{1.0, -0.5, 2.0}), usage_error);
  EXPECT_THROW((void)s.with_durations(
                   std::vector<double>{1.0, std::numeric_limits<double>::quiet_NaN(), 2.0}),
               usage_error);
}

TEST(AccessSequence, RefusesDecreasingStarts) {
  auto s = tiny();
  s.operations[2].start_s = 0.5;
  expect_refused(s, "operation 2 'relu.backward': starts at 0.5");
}

TEST(AccessSequence, RefusesNegativeOrNonFiniteTimes) {
  auto s = tiny();
  s.operations[1].duration_s = -1;
  expect_refused(s, "operation 1 'relu': duration_s");
  s = tiny();
  s.operations[0].start_s = std::numeric_limits<double>::infinity();
  expect_refused(s, "operation 0 'conv': start_s");
}

TEST(AccessSequence, RefusesPersistentTensorsMadeOrFreedInTheIteration) {
  auto s = tiny();
  s.tensors[0].created_by = 0;
  expect_refused(s, "tensor 0 'w': a parameter exists before the iteration");
  s = tiny();
  s.tensors[0].freed_after = 1;
  expect_refused(s, "tensor 0 'w': a parameter lives across iterations");
}

TEST(AccessSequence, RefusesTransientTensorsWithoutCreator) {
  auto s = tiny();
  s.tensors[2].created_by.reset();
  expect_refused(s, "tensor 2 'b': a activation is made during the iteration");
}

TEST(AccessSequence, RefusesAccessesToMissingOperations) {
  auto s = tiny();
  s.tensors[1].created_by = 9;
  expect_refused(s, "tensor 1 'a': created_by names operation 9, but the sequence has 3");
  s = tiny();
  s.tensors[1].read_by = {1, 7};
  expect_refused(s, "tensor 1 'a': read_by names operation 7");
  s = tiny();
  s.tensors[4].freed_after = 3;
  expect_refused(s, "tensor 4 'g': freed_after names operation 3");
}

TEST(AccessSequence, RefusesReadsBeforeCreation) {
  auto s = tiny();
  s.tensors[2].read_by = {1, 2};  // relu reads what it makes
  expect_refused(s, "tensor 2 'b': read by operation 1 'relu', not after its creation");
}

TEST(AccessSequence, RefusesReadsOutOfOrder) {
  auto s = tiny();
  s.tensors[1].read_by = {2, 1};
  expect_refused(s, "tensor 1 'a': read_by lists operation 1 'relu' after operation 2");
  s.tensors[1].read_by = {1, 1};
  expect_refused(s, "tensor 1 'a': read_by lists operation 1 'relu' after operation 1");
}

TEST(AccessSequence, RefusesFreesBeforeTheLastRead) {
  auto s = tiny();
  s.tensors[1].freed_after = 1;
  expect_refused(s, "tensor 1 'a': freed after operation 1 'relu', before its use by operation 2");
}

std::string to_json(const access_sequence& s) {
  std::ostringstream out;
  write_access_sequence_json(s, out);
  return out.str();
}

access_sequence from_json(const std::string& text) {
  std::istringstream in(text);
  return read_access_sequence_json(in, "seq.json");
}

bool same(const access_sequence& a, const access_sequence& b) {
  if (a.model != b.model || a.batch_size != b.batch_size || a.other_bytes != b.other_bytes ||
      a.operations.size() != b.operations.size() || a.tensors.size() != b.tensors.size())
    return false;
  for (std::size_t i = 0; i < a.operations.size(); ++i) {
    const auto &x = a.operations[i], &y = b.operations[i];
    if (x.name != y.name || x.where != y.where || x.kind != y.kind || x.start_s != y.start_s ||
        x.duration_s != y.duration_s || x.random != y.random)
      return false;
  }
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.bytes != y.bytes || x.role != y.role ||
        x.created_by != y.created_by || x.read_by != y.read_by || x.freed_after != y.freed_after)
      return false;
  }
  return true;
}

TEST(AccessSequenceJson, ReadsBackWhatItWrites) {
  const auto s = tiny();
  EXPECT_TRUE(same(from_json(to_json(s)), s));
  const auto vgg = testing::small_vgg();
  EXPECT_NO_THROW(validate(vgg));
  EXPECT_TRUE(same(from_json(to_json(vgg)), vgg));
}

void expect_json_refused(const std::function<void(std::string&)>& edit,
                         const std::string& fragment) {
  auto text = to_json(tiny());
  edit(text);
  try {
    (void)from_json(text);
    FAIL() << "accepted a document that should be refused for: " << fragment;
  } catch (const config_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("seq.json: "), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

void replace_once(std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

TEST(AccessSequenceJson, RefusesAnotherSchemaVersion) {
  expect_json_refused(
      [](std::string& t) { replace_once(t, "\"schema_version\": 3", "\"schema_version\": 1"); },
      "schema version 1, but this build of tandem reads version 3 only");
}

// Schema 2 had no scratch_peak_bytes: its files are read as sequences whose operations hold all
// their scratch at once.
TEST(AccessSequenceJson, ReadsSchemaTwoWithoutScratchPeaks) {
  auto s = tiny();
  s.operations[1].scratch_peak_bytes = 4;
  std::stringstream text;
  write_access_sequence_json(s, text);
  auto document = nlohmann::json::parse(text.str());
  EXPECT_EQ(document["operations"][1]["scratch_peak_bytes"], 4);
  EXPECT_TRUE(document["operations"][0]["scratch_peak_bytes"].is_null());
  std::stringstream same(document.dump());
  EXPECT_EQ(read_access_sequence_json(same, "same"), s);
  document["schema_version"] = 2;
  for (auto& op : document["operations"]) op.erase("scratch_peak_bytes");
  std::stringstream old(document.dump());
  const auto read = read_access_sequence_json(old, "old");
  for (const auto& op : read.operations) EXPECT_FALSE(op.scratch_peak_bytes);
  document["schema_version"] = 3;
  std::stringstream missing(document.dump());
  EXPECT_THROW(static_cast<void>(read_access_sequence_json(missing, "missing")), config_error);
}

TEST(AccessSequenceJson, NamesTheMalformedField) {
  expect_json_refused([](std::string& t) { replace_once(t, "\"model\"", "\"modell\""); },
                      "model: missing");
  expect_json_refused([](std::string& t) { replace_once(t, "\"elementwise\"", "\"relu\""); },
                      "operations[1].kind: expected one of convolution, matmul");
  expect_json_refused([](std::string& t) { replace_once(t, "\"bytes\": 10,", "\"bytes\": -10,"); },
                      "tensors[1].bytes: expected a whole number >= 0");
  expect_json_refused(
      [](std::string& t) { replace_once(t, "\"created_by\": 0", "\"created_by\": \"conv\""); },
      "tensors[1].created_by: expected null or a whole number");
  expect_json_refused([](std::string& t) { replace_once(t, "\"random\": true", "\"random\": 1"); },
                      "operations[1].random: expected true or false");
  expect_json_refused([](std::string& t) { t = "[1, 2]"; }, "the document: expected an object");
  expect_json_refused([](std::string& t) { t.resize(t.size() / 2); }, "not valid JSON");
}

TEST(AccessSequenceJson, RefusesASequenceThatContradictsItself) {
  expect_json_refused(
      [](std::string& t) {
        auto document = nlohmann::json::parse(t);
        document["tensors"][1]["read_by"] = {2, 1};
        t = document.dump();
      },
      "tensor 1 'a': read_by lists operation 1 'relu' after operation 2");
}

}  // namespace
}  // namespace tandem::footprint
