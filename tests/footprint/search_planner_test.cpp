// The searching planners (home, tandem, optimal) over HOME's decision space: every plan
// validates, the budget is met where the exact planner proves it can be, HOME is deterministic
// for a seed, CBC keeps to its time limit, options are read and refused clearly, and on random
// CNN-like sequences no planner beats optimal's proven optimum by more than the modelling
// difference its note documents (optimal_planner.cpp, Note [The integer program of a plan]).

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <stop_token>
#include <string>
#include <vector>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint {
namespace {

const char* const small_home = "home:iterations=6,particles=6,seed=3";

std::string usage_message(const std::string& spec) {
  try {
    (void)make_planner(spec);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(SearchPlanners, AreRegisteredAfterTheBaselines) {
  const auto names = planner_names();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ((std::vector<std::string>(names.end() - 3, names.end())),
            (std::vector<std::string>{"home", "tandem", "optimal"}));
  EXPECT_EQ(make_planner("optimal:time_limit=2")->name(), "optimal");
  EXPECT_EQ(planner_name_of("home:iterations=3"), "home");
  EXPECT_FALSE(planner_option_help("home").empty());
  EXPECT_TRUE(planner_option_help("capuchin").empty());
}

// `default` names tandem's search, options and all, and is suggested for a near miss.
TEST(SearchPlanners, DefaultNamesTandemsSearch) {
  EXPECT_EQ(make_planner("default")->name(), default_planner);
  EXPECT_EQ(make_planner("default:time_limit=0.5")->name(), "tandem");
  EXPECT_EQ(planner_name_of("default:evaluations=10"), "tandem");
  EXPECT_NE(usage_message("defualt").find("did you mean 'default'?"), std::string::npos)
      << usage_message("defualt");
}

TEST(SearchPlanners, RefuseBadOptionsNamingThem) {
  EXPECT_NE(usage_message("home:iteration=5")
                .find("planner 'home' has no option 'iteration'; did you mean 'iterations'?"),
            std::string::npos)
      << usage_message("home:iteration=5");
  EXPECT_NE(usage_message("home:particles=0").find("particles takes a whole number from 1"),
            std::string::npos);
  EXPECT_NE(usage_message("optimal:time_limit=soon").find("time_limit takes a number"),
            std::string::npos);
  EXPECT_NE(usage_message("capuchin:x=1").find("planner 'capuchin' takes no options"),
            std::string::npos);
  EXPECT_NE(usage_message("tandem:evaluations").find("is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(usage_message("home:seed=1,seed=2").find("gives the option 'seed' twice"),
            std::string::npos);
}

TEST(SearchPlanners, PlansValidateAndMeetSixtyPercentOfTheVanillaPeak) {
  const auto s = testing::small_vgg();
  const auto vanilla = predict(s, plan{});
  const auto budget = vanilla.peak_bytes * 6 / 10;
  for (const std::string& spec :
       {std::string(small_home), std::string("tandem"), std::string("optimal:time_limit=20")}) {
    const auto p = make_planner(spec)->make_plan(s, {budget, {}});
    EXPECT_NO_THROW(validate(p, s)) << spec;
    ASSERT_TRUE(p.search.has_value()) << spec;
    const auto planned = predict(s, p);
    EXPECT_EQ(p.search->predicted_s, planned.iteration_s) << spec;
    EXPECT_EQ(p.search->predicted_peak_bytes, planned.peak_bytes) << spec;
    if (spec != small_home) {
      EXPECT_LE(planned.peak_bytes, budget) << spec;
    }
    EXPECT_LT(planned.peak_bytes, vanilla.peak_bytes) << spec;
  }
}

TEST(SearchPlanners, OptimalReportsItsProgramAndItsProof) {
  const auto s = testing::small_vgg();
  const auto budget = predict(s, plan{}).peak_bytes * 7 / 10;
  const auto p = make_planner("optimal:time_limit=20")->make_plan(s, {budget, {}});
  ASSERT_TRUE(p.search && p.search->objective_s && p.search->bound_s);
  EXPECT_TRUE(p.search->proven_optimal);
  EXPECT_LE(*p.search->bound_s, *p.search->objective_s * (1 + 1e-6));
  EXPECT_GT(*p.search->objective_s, s.iteration_s() * (1 - 1e-9));
}

TEST(SearchPlanners, HomeIsDeterministicForASeed) {
  const auto s = testing::small_vgg(3, 4u << 20);
  const auto budget = predict(s, plan{}).peak_bytes * 7 / 10;
  const auto a = make_planner(small_home)->make_plan(s, {budget, {}});
  const auto b = make_planner(small_home)->make_plan(s, {budget, {}});
  EXPECT_EQ(a.decisions, b.decisions);
  EXPECT_EQ(a.search->evaluations, b.search->evaluations);
  // With a time limit that the evaluations run out long before.
  const auto c = make_planner("tandem:time_limit=600")->make_plan(s, {budget, {}});
  const auto d = make_planner("tandem:time_limit=600")->make_plan(s, {budget, {}});
  EXPECT_EQ(c.decisions, d.decisions);
}

// Ctrl-C during `tandem plan` or a planned `tandem run`: the search ends at once with the best
// plan it has, as at its time limit, rather than running its iterations out.
TEST(SearchPlanners, AStopRequestedEndsTheSearchWithTheBestPlanSoFar) {
  const auto s = testing::small_vgg(3, 4u << 20);
  const auto budget = predict(s, plan{}).peak_bytes * 7 / 10;
  const char* const endless = "home:iterations=100000,particles=400,seed=3";
  std::stop_source stop;
  stop.request_stop();
  const auto stopped =
      make_planner(endless)->make_plan(s, {.budget_bytes = budget, .stop = stop.get_token()});
  ASSERT_TRUE(stopped.search);
  EXPECT_NO_THROW(validate(stopped, s));
  EXPECT_LT(stopped.search->evaluations, 400u);  // not even one pricing of the swarm
  const auto tandem = make_planner("tandem:time_limit=600");
  const auto searched = tandem->make_plan(s, {.budget_bytes = budget, .stop = stop.get_token()});
  ASSERT_TRUE(searched.search);
  EXPECT_NO_THROW(validate(searched, s));
  // Its first seed, priced and neither fitted nor improved.
  const auto whole = tandem->make_plan(s, {budget, {}});
  EXPECT_LT(searched.search->evaluations, whole.search->evaluations);
}

TEST(SearchPlanners, OptimalKeepsToItsTimeLimit) {
  // A deeper chain than CBC proves in a fraction of a second.
  std::vector<testing::layer_spec> layers;
  for (int i = 0; i < 60; ++i) {
    const auto bytes = static_cast<std::size_t>((4 + (i * 7) % 5) << 20);
    layers.push_back(
        {"conv" + std::to_string(i), op_kind::convolution, bytes, 1e-3 * (1 + (i * 3) % 4), 0});
  }
  const auto s = testing::cnn_sequence(layers, 4u << 20, "deep");
  const auto budget = predict(s, plan{}).peak_bytes / 2;
  const auto p = make_planner("optimal:time_limit=0.5")->make_plan(s, {budget, {}});
  ASSERT_TRUE(p.search);
  EXPECT_LT(p.search->seconds, 0.5 + 1.5);  // CBC's own checks come between its nodes
  EXPECT_NO_THROW(validate(p, s));
}

TEST(SearchPlanners, WithoutABudgetTheyLowerThePeak) {
  const auto s = testing::small_vgg();
  const auto vanilla = predict(s, plan{});
  for (const std::string& spec : {std::string("tandem"), std::string("optimal:time_limit=20")}) {
    const auto p = make_planner(spec)->make_plan(s, {});
    EXPECT_NO_THROW(validate(p, s));
    EXPECT_LT(predict(s, p).peak_bytes, vanilla.peak_bytes) << spec;
  }
}

// An operation whose input and scratch alone exceed the budget: no plan fits. tandem's search
// then keeps the rest of the iteration within the budget (the plan most likely to run within it
// for real), paying a rerun for it, rather than keeping the fastest plan, which is over the
// budget at that operation by just as much.
TEST(SearchPlanners, WhereNoPlanFitsTandemStaysWithinTheBudgetEverywhereElse) {
  testing::sequence_builder b("floor");
  const auto make_a = b.op("make_a", 1);
  const auto big = b.op("big", 1);  // reads a, holds 5000 B of scratch
  const auto make_c = b.op("make_c", 1);
  b.op("pad", 2);
  const auto use = b.op("use", 1, phase::backward);
  b.tensor("a", 1000, make_a, {big, use});
  b.tensor("scratch", 5000, big, {}, tensor_role::temporary);
  b.tensor("c", 2000, make_c, {use});
  const auto& s = b.get();
  // A channel too slow for any swap to free memory: only reruns can.
  const planning_request request{.budget_bytes = 2500, .costs = {100}};
  // Kept: a + scratch = 6000 at big; a + c = 3000 from make_c to the end.
  const auto kept = predict(s, plan{}, request.costs);
  EXPECT_EQ(kept.peak_bytes, 6000u);
  const auto p = make_planner("tandem")->make_plan(s, request);
  const auto planned = predict(s, p, request.costs);
  EXPECT_EQ(planned.peak_bytes, 6000u);  // big's floor
  EXPECT_GT(planned.iteration_s, kept.iteration_s);
  for (const auto& point : planned.curve) {
    if (point.at_s >= 3 && point.at_s < 5) {
      EXPECT_LE(point.bytes, 2500u) << "during pad, at " << point.at_s;
    }
  }
}

// tandem's search starts from capuchin's, checkpoint's and tensile's plans and returns one where
// it prices better than what the search found: never worse than any of them, over the budget
// first.
TEST(SearchPlanners, TandemNeverPricesWorseThanItsSeeds) {
  const auto s = testing::small_vgg();
  const auto vanilla = predict(s, plan{});
  for (const double share : {0.3, 0.45, 0.6, 0.8}) {
    const planning_request request{
        .budget_bytes = static_cast<std::size_t>(share * static_cast<double>(vanilla.peak_bytes)),
        .costs = {}};
    const auto excess = [&](const plan& p) {
      const auto predicted = predict(s, p);
      return std::make_pair(predicted.peak_bytes > request.budget_bytes
                                ? predicted.peak_bytes - request.budget_bytes
                                : 0,
                            predicted.iteration_s);
    };
    const auto tandem = excess(make_planner("tandem:time_limit=30")->make_plan(s, request));
    for (const char* seed : {"capuchin", "checkpoint", "tensile"}) {
      const auto other = excess(make_planner(seed)->make_plan(s, request));
      EXPECT_LE(tandem.first, other.first) << seed << " at " << share;
      if (tandem.first == 0 && other.first == 0) {
        EXPECT_LE(tandem.second, other.second * (1 + 1e-9)) << seed << " at " << share;
      }
    }
  }
}

TEST(SearchPlanners, OptimalIsNotBeatenBeyondItsModellingDifference) {
  // Where optimal proves its program's optimum and its plan fits, a fitting plan of another
  // planner of the same decision space (HOME's: one action per saved activation) is at most
  // this much faster under the cost model: the program's stall chain and memory windows are a
  // model of the replay (its note), not the replay itself. Planners outside that space may beat
  // it: capuchin's finer stretches came out 7.7% faster on a case rapidcheck found
  // (seed=3031495876479185354), so optimal is exact within HOME's space only. tandem's search
  // is outside it too (it may return a seed's whole plan, capuchin's or tensile's):
  // seed=17502765698538658899 found a tandem plan faster than optimal's by more than this.
  constexpr double modelling_tolerance = 0.05;
  std::size_t compared = 0;
  const bool held = rc::check([&] {
    const auto n = *rc::gen::inRange<std::size_t>(4, 14);
    std::vector<testing::layer_spec> layers;
    for (std::size_t i = 0; i < n; ++i) {
      const auto mib = *rc::gen::inRange<std::size_t>(1, 9);
      const auto ms = *rc::gen::inRange(1, 6);
      const auto kind = *rc::gen::element(op_kind::convolution, op_kind::elementwise);
      layers.push_back({"l" + std::to_string(i), kind, mib << 20, 1e-3 * ms, 0});
    }
    const auto s = testing::cnn_sequence(layers, 2u << 20, "random");
    const auto share = *rc::gen::inRange(45, 90);
    const auto budget = predict(s, plan{}).peak_bytes * static_cast<std::size_t>(share) / 100;
    const planning_request request{budget, {.copy_bandwidth = 4e9}};
    const auto exact = make_planner("optimal:time_limit=10")->make_plan(s, request);
    validate(exact, s);  // throws, failing the property
    const auto exact_predicted = predict(s, exact, request.costs);
    for (const char* spec : {"home:iterations=4,particles=4"}) {
      const auto p = make_planner(spec)->make_plan(s, request);
      validate(p, s);  // throws, failing the property
      const auto predicted = predict(s, p, request.costs);
      if (!exact.search->proven_optimal || exact_predicted.peak_bytes > budget ||
          predicted.peak_bytes > budget)
        continue;
      ++compared;
      RC_ASSERT(predicted.iteration_s >= exact_predicted.iteration_s * (1 - modelling_tolerance));
    }
  });
  EXPECT_TRUE(held);
  EXPECT_GT(compared, 10u);  // the property compared real plans
}

}  // namespace
}  // namespace tandem::footprint
