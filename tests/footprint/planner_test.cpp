// The planners on CNN-like sequences: every plan validates, lowers the predicted peak below
// keeping everything (none keeps everything), and the budget-driven planners meet a budget of
// 60% of the vanilla peak. The registry lists them and refuses unknown names helpfully.

#include "tandem/footprint/planner.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"
#include "tandem/footprint/cost_model.hpp"

namespace tandem::footprint {
namespace {

/// Deep enough for checkpointing to reach 60% of the vanilla peak: the first two.
std::vector<access_sequence> cnn_like() {
  using testing::layer_spec;
  std::vector<layer_spec> plain;  // conv-relu pairs at one size, then a classifier
  for (int i = 1; i <= 16; ++i) {
    plain.push_back({"conv" + std::to_string(i), op_kind::convolution, 6u << 20, 3e-3, 1u << 20});
    plain.push_back({"relu" + std::to_string(i), op_kind::elementwise, 6u << 20, 3e-4, 0});
  }
  plain.push_back({"pool", op_kind::pooling, 1u << 20, 2e-4, 0});
  plain.push_back({"fc", op_kind::matmul, 64u << 10, 1e-3, 2u << 20});
  return {testing::small_vgg(), testing::cnn_sequence(plain, 3u << 20, "conv-chain"),
          testing::small_vgg(3, 4u << 20)};
}

TEST(PlannerRegistry, ListsThePlannersInOrder) {
  EXPECT_EQ(planner_names(),
            (std::vector<std::string>{"none", "vdnn-all", "vdnn-conv", "superneurons", "checkpoint",
                                      "capuchin", "tensile", "home", "tandem", "optimal"}));
  for (const auto& name : planner_names()) {
    const auto p = make_planner(name);
    EXPECT_EQ(p->name(), name);
    EXPECT_FALSE(p->summary().empty()) << name;
  }
}

TEST(PlannerRegistry, RefusesAnUnknownNameSuggestingTheNearest) {
  try {
    (void)make_planner("capuchn");
    FAIL() << "accepted an unknown planner";
  } catch (const usage_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unknown planner 'capuchn'; did you mean 'capuchin'?"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("known planners: none, vdnn-all, vdnn-conv, superneurons, "
                           "checkpoint, capuchin, tensile, home, tandem, optimal"),
              std::string::npos)
        << message;
  }
}

TEST(Planners, NoneKeepsEverything) {
  for (const auto& s : cnn_like()) {
    const auto p = make_planner("none")->make_plan(s, {});
    EXPECT_TRUE(p.decisions.empty());
    EXPECT_EQ(p.planner, "none");
    EXPECT_EQ(p.model, s.model);
  }
}

TEST(Planners, EveryPlanValidatesAndLowersThePeak) {
  for (const auto& s : cnn_like()) {
    const auto vanilla = predict(s, plan{});
    for (const auto& name : planner_names()) {
      if (name == "none") continue;
      // The searches with settings that keep the test in seconds (search_planner_test.cpp).
      const auto spec = name == "home"      ? name + ":iterations=4,particles=4"
                        : name == "optimal" ? name + ":time_limit=10"
                                            : name;
      for (const std::size_t budget : {std::size_t{0}, vanilla.peak_bytes * 6 / 10}) {
        const auto p = make_planner(spec)->make_plan(s, {budget, {}});
        EXPECT_EQ(p.planner, name);
        EXPECT_EQ(p.budget_bytes, budget);
        EXPECT_NO_THROW(validate(p, s)) << name << " on " << s.model;
        const auto planned = predict(s, p);
        EXPECT_LT(planned.peak_bytes, vanilla.peak_bytes)
            << name << " on " << s.model << " with budget " << budget;
      }
    }
  }
}

TEST(Planners, CheckpointAndCapuchinMeetSixtyPercentOfTheVanillaPeak) {
  // Not the shallow VGG: its first block's backward holds more than 60% at once, with its
  // gradients, for recomputation alone.
  auto sequences = cnn_like();
  sequences.pop_back();
  for (const auto& s : sequences) {
    const auto vanilla = predict(s, plan{});
    const auto budget = vanilla.peak_bytes * 6 / 10;
    for (const char* name : {"checkpoint", "capuchin"}) {
      const auto p = make_planner(name)->make_plan(s, {budget, {}});
      const auto planned = predict(s, p);
      EXPECT_LE(planned.peak_bytes, budget) << name << " on " << s.model;
    }
  }
}

TEST(Planners, VdnnConvOffloadsASubsetOfVdnnAllAndIgnoresTheBudget) {
  for (const auto& s : cnn_like()) {
    const auto all = make_planner("vdnn-all")->make_plan(s, {});
    const auto conv = make_planner("vdnn-conv")->make_plan(s, {});
    EXPECT_LT(conv.decisions.size(), all.decisions.size()) << s.model;
    for (const auto& d : conv.decisions) {
      EXPECT_EQ(d.what, action::swap);
      EXPECT_NE(std::find(all.decisions.begin(), all.decisions.end(), d), all.decisions.end());
    }
    auto budgeted = make_planner("vdnn-all")->make_plan(s, {1, {}});
    EXPECT_EQ(budgeted.decisions, all.decisions);
  }
}

TEST(Planners, CapuchinWithoutABudgetAddsNoStall) {
  for (const auto& s : cnn_like()) {
    const auto p = make_planner("capuchin")->make_plan(s, {});
    EXPECT_FALSE(p.decisions.empty()) << s.model;
    EXPECT_EQ(predict(s, p).stall_s, 0) << s.model;
  }
}

TEST(Planners, CapuchinAndTensileKeepNoSwapThatIsCalledOff) {
  // On channels from fast to too slow for most copies, a swap whose tensor is due back before
  // it has left saves nothing (cost_model.cpp, "Called off"): neither planner keeps one.
  for (const double bandwidth : {1e9, 1e8, 1e7, 1e6}) {
    for (const auto& s : cnn_like()) {
      const auto vanilla = predict(s, plan{}).peak_bytes;
      const cost_options costs{bandwidth};
      for (const char* name : {"capuchin", "tensile"}) {
        const auto p =
            make_planner(name)->make_plan(s, {.budget_bytes = vanilla * 6 / 10, .costs = costs});
        EXPECT_EQ(predict(s, p, costs).called_off_bytes, 0u)
            << name << " on " << s.model << " at " << bandwidth << " B/s";
      }
    }
  }
}

TEST(Planners, TriggerCopiesWhereTheExecutorLooks) {
  // The executor looks at its triggers only as operations start and end: a trigger inside an
  // operation would be met at its end, late. On channels fast and slow, so that prefetches are
  // wanted at every kind of moment.
  for (const double bandwidth : {1e9, 1e7}) {
    for (const auto& s : cnn_like()) {
      const auto vanilla = predict(s, plan{}).peak_bytes;
      const cost_options costs{bandwidth};
      for (const char* name :
           {"vdnn-all", "superneurons", "capuchin", "tensile", "home:iterations=4"}) {
        const auto p =
            make_planner(name)->make_plan(s, {.budget_bytes = vanilla * 6 / 10, .costs = costs});
        for (const auto& d : p.decisions) {
          if (d.what != action::swap) continue;
          for (const auto& when : {d.swap_out, d.swap_in}) {
            const double length = s.operations[when.op].duration_s;
            EXPECT_TRUE(when.delay_s == 0 || when.delay_s == length)
                << name << " on " << s.model << ": tensor " << d.tensor << " triggered "
                << when.delay_s << " s into operation " << when.op << " of " << length << " s";
          }
        }
      }
    }
  }
}

TEST(Planners, CheckpointWithoutABudgetKeepsAboutSqrtNActivations) {
  const auto s = testing::small_vgg();
  const auto p = make_planner("checkpoint")->make_plan(s, {});
  std::size_t saved = 0;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    const auto& x = s.tensors[t];
    if (x.role == tensor_role::activation && x.created_by &&
        s.operations[*x.created_by].where == phase::forward && x.read_by.size() == 2)
      ++saved;
  }
  for (const auto& d : p.decisions) EXPECT_EQ(d.what, action::recompute);
  // 21 saved activations (the input to pool4's output): segments of round(sqrt(21)) = 5, the
  // last of each kept, and the last one.
  EXPECT_EQ(saved, 21u);
  EXPECT_EQ(p.decisions.size(), saved - 5);
}

}  // namespace
}  // namespace tandem::footprint
