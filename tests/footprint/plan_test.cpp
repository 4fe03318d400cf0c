// Plans: validation against their sequence (every refusal names the decision and says what is
// wrong) and their JSON, which reads back equal and refuses malformed input naming the field.

#include "tandem/footprint/plan.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"

namespace tandem::footprint {
namespace {

using testing::sequence_builder;

/// a -> b = f(a, w) -> c = g(b, mask) -> backward reads c, b (and w), a in turn.
access_sequence chain() {
  sequence_builder s("chain");
  const auto make_a = s.op("make_a", 1);
  const auto make_b = s.op("make_b", 1);
  const auto make_c = s.op("make_c", 1);
  const auto use_c = s.op("use_c", 1, phase::backward);
  const auto use_b = s.op("use_b", 1, phase::backward);
  const auto use_a = s.op("use_a", 1, phase::backward);
  s.tensor("w", 50, std::nullopt, {make_b, use_b});  // 0
  s.tensor("a", 100, make_a, {make_b, use_a});       // 1
  s.tensor("b", 200, make_b, {make_c, use_b});       // 2
  s.tensor("c", 300, make_c, {use_c});               // 3
  s.tensor("mask", 10, make_a, {make_c});            // 4: gone after make_c
  return s.get();
}

decision swap(std::size_t t, std::size_t released_after, std::size_t out_op, std::size_t in_op) {
  return {t, action::swap, released_after, released_after + 1, {out_op, 0}, {in_op, 0.25}, false};
}

decision recompute(std::size_t t, std::size_t released_after) {
  return {t, action::recompute, released_after, released_after + 1, {}, {}, false};
}

plan with(std::vector<decision> decisions) {
  plan p;
  p.planner = "test";
  p.model = "chain";
  p.batch_size = 8;
  p.budget_bytes = 1000;
  p.decisions = std::move(decisions);
  return p;
}

void expect_refused(const plan& p, const std::string& fragment) {
  try {
    validate(p, chain());
    FAIL() << "accepted a plan that should be refused for: " << fragment;
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Plan, NamesItsActions) {
  EXPECT_EQ(to_string(action::swap), "swap");
  EXPECT_EQ(to_string(action::recompute), "recompute");
}

TEST(Plan, AcceptsSwapsAndRecomputesThatFit) {
  EXPECT_NO_THROW(validate(plan{}, chain()));
  EXPECT_NO_THROW(validate(with({swap(1, 1, 1, 3), swap(0, 0, 0, 0)}), chain()));
  // b's rerun before use_b reads a, recomputed itself (rebuilt first), and w.
  EXPECT_NO_THROW(validate(with({recompute(2, 1), recompute(1, 1)}), chain()));
  // ... and w due back for use_b: the rerun waits for it.
  EXPECT_NO_THROW(validate(with({recompute(2, 1), swap(0, 1, 2, 3)}), chain()));
}

TEST(Plan, RefusesMissingTensorsAndAccesses) {
  expect_refused(with({swap(9, 0, 0, 1)}), "decision 0: tensor 9 does not exist");
  auto past = swap(3, 1, 0, 1);
  past.needed_at = 2;
  expect_refused(with({past}),
                 "decision 0 (tensor 3 'c'): needed_at is access 2, which does not exist");
}

TEST(Plan, RefusesStretchesThatEndBeforeTheyStartOrSkipARead) {
  auto backwards = swap(1, 1, 0, 1);
  backwards.needed_at = 1;
  expect_refused(with({backwards}), "decision 0 (tensor 1 'a'): the stretch ends (needed_at 1)");
  auto skipping = swap(1, 0, 0, 1);
  skipping.needed_at = 2;
  expect_refused(with({skipping}), "(tensor 1 'a'): read by operation 1 'make_b' (access 1)");
}

TEST(Plan, RefusesOverlappingStretches) {
  expect_refused(with({swap(2, 1, 2, 3), recompute(2, 1)}),
                 "decision 1 (tensor 2 'b'): its stretch overlaps decision 0's");
}

TEST(Plan, RefusesTriggersThatCannotBringItBackInTime) {
  expect_refused(with({swap(2, 1, 2, 4)}),
                 "swap_in is triggered by operation 4 'use_b', not before operation 4");
  expect_refused(with({swap(2, 1, 5, 3)}), "swap_out is triggered by operation 5 'use_a'");
  expect_refused(with({swap(2, 1, 9, 3)}), "swap_out names operation 9, but the sequence has 6");
  auto late = swap(2, 1, 2, 3);
  late.swap_in.delay_s = -1;
  expect_refused(with({late}), "(tensor 2 'b'): swap_in.delay_s must be");
}

TEST(Plan, RefusesRecomputingPersistentTensors) {
  expect_refused(with({recompute(0, 0)}),
                 "decision 0 (tensor 0 'w'): a parameter has no creating operation");
}

TEST(Plan, RefusesRerunsThatReadWhatIsOut) {
  expect_refused(with({recompute(3, 0)}),
                 "recomputing tensor 3 'c' before operation 3 'use_c' runs operation 2 'make_c' "
                 "again, which reads tensor 4 'mask', released after operation 2 'make_c'");
  expect_refused(with({swap(1, 1, 1, 3), recompute(2, 1)}),
                 "decision 1 (tensor 2 'b'): recomputing tensor 2 'b' before operation 4 'use_b' "
                 "runs operation 1 'make_b' again, which reads tensor 1 'a', swapped out then by "
                 "decision 0 (until operation 5 'use_a')");
}

/// w (tensor 0) swapped from its last read (access 2, use_b) to its first (make_b) of the next
/// iteration.
decision wrap_w(std::size_t out_op, std::size_t in_op) {
  return {0, action::swap, 2, 1, {out_op, 0.5}, {in_op, 0.25}, true};
}

TEST(PlanValidate, AcceptsAPersistentTensorSwappedAcrossIterations) {
  EXPECT_NO_THROW(validate(with({wrap_w(4, 0)}), chain()));
  EXPECT_NO_THROW(validate(with({wrap_w(5, 0)}), chain()));
  // The copy out's trigger may come before the release (issued at the release's end).
  EXPECT_NO_THROW(validate(with({wrap_w(2, 0)}), chain()));
  // With a stretch inside the iteration too, between its two reads.
  EXPECT_NO_THROW(validate(with({wrap_w(4, 0), swap(0, 1, 1, 3)}), chain()));
}

TEST(PlanValidate, RefusesAStretchAcrossIterationsThatCannotWrap) {
  auto a = wrap_w(4, 0);
  a.tensor = 1;
  a.released_after = 2;
  expect_refused(with({a}),
                 "decision 0 (tensor 1 'a'): wraps the iteration boundary, but a activation is "
                 "made in the iteration and does not outlive it");
  auto recomputed = wrap_w(4, 0);
  recomputed.what = action::recompute;
  expect_refused(with({recomputed}), "wraps the iteration boundary by recompute");
  auto early = wrap_w(4, 0);
  early.released_after = 1;
  expect_refused(with({early}),
                 "wraps the iteration boundary from access 1 to access 1 of the next iteration; "
                 "a stretch across iterations runs from the last access (released_after = 2) "
                 "to the first read (needed_at = 1)");
  auto late = wrap_w(4, 0);
  late.needed_at = 2;
  expect_refused(with({late}), "to the first read (needed_at = 1)");
  expect_refused(with({wrap_w(4, 1)}),
                 "swap_in is triggered by operation 1 'make_b', not before operation 1 'make_b' "
                 "that needs the tensor back");
  expect_refused(with({wrap_w(6, 0)}), "swap_out names operation 6, but the sequence has 6");
  expect_refused(with({wrap_w(4, 0), swap(0, 0, 0, 0)}),
                 "decision 1 (tensor 0 'w'): its stretch overlaps decision 0's: one wraps the "
                 "iteration boundary");
  expect_refused(with({wrap_w(4, 0), wrap_w(5, 0)}), "its stretch overlaps decision 0's");
}

TEST(PlanValidate, ARerunMayReadATensorSwappedAcrossIterations) {
  // b's rerun before use_b runs make_b, which reads a and w: w is in between its reads.
  EXPECT_NO_THROW(validate(with({wrap_w(4, 0), recompute(2, 1)}), chain()));
}

std::string to_json(const plan& p) {
  std::ostringstream out;
  write_plan_json(p, out);
  return out.str();
}

plan from_json(const std::string& text) {
  std::istringstream in(text);
  return read_plan_json(in, "plan.json");
}

TEST(PlanJson, ReadsBackWhatItWrites) {
  const auto p = with({swap(0, 1, 2, 3), recompute(2, 1), recompute(1, 1), wrap_w(4, 0)});
  EXPECT_EQ(from_json(to_json(p)), p);
  EXPECT_EQ(nlohmann::json::parse(to_json(p))["schema_version"], 2);
  EXPECT_EQ(from_json(to_json(plan{})), plan{});
}

void expect_json_refused(const std::function<void(nlohmann::json&)>& edit,
                         const std::string& fragment) {
  auto document = nlohmann::json::parse(to_json(with({swap(0, 1, 2, 3), recompute(2, 1)})));
  edit(document);
  try {
    (void)from_json(document.dump());
    FAIL() << "accepted a document that should be refused for: " << fragment;
  } catch (const config_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("plan.json: "), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST(PlanJson, ReadsSchema1WhereNothingWraps) {
  const auto p = with({swap(0, 1, 2, 3), recompute(2, 1)});
  auto document = nlohmann::json::parse(to_json(p));
  document["schema_version"] = 1;
  for (auto& d : document["decisions"]) d.erase("wraps");
  EXPECT_EQ(from_json(document.dump()), p);
}

TEST(PlanJson, Schema2NeedsWraps) {
  expect_json_refused([](nlohmann::json& d) { d["decisions"][0].erase("wraps"); },
                      "decisions[0].wraps: missing");
  expect_json_refused([](nlohmann::json& d) { d["decisions"][1]["wraps"] = 1; },
                      "decisions[1].wraps: expected true or false");
}

TEST(PlanJson, RefusesAnotherSchemaVersion) {
  expect_json_refused([](nlohmann::json& d) { d["schema_version"] = 7; },
                      "a plan of schema version 7, but this build of tandem reads version 2");
}

TEST(PlanJson, NamesTheMalformedField) {
  expect_json_refused([](nlohmann::json& d) { d.erase("planner"); }, "planner: missing");
  expect_json_refused([](nlohmann::json& d) { d["decisions"][1]["action"] = "drop"; },
                      "decisions[1].action: expected \"swap\" or \"recompute\"");
  expect_json_refused([](nlohmann::json& d) { d["decisions"][0]["swap_in"]["delay_s"] = -2; },
                      "decisions[0].swap_in.delay_s: expected a number of seconds >= 0");
  expect_json_refused([](nlohmann::json& d) { d["decisions"][0].erase("tensor"); },
                      "decisions[0].tensor: missing");
  expect_json_refused([](nlohmann::json& d) { d["budget_bytes"] = "1 GiB"; },
                      "budget_bytes: expected a whole number >= 0");
}

}  // namespace
}  // namespace tandem::footprint
