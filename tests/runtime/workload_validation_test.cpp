// One validation (issue 14): a workload gets the same verdict and the same message from the run
// side (what `tandem run`, `profile` and a real `maxbatch` call) and the sim side (`tandem sim`
// and `maxbatch --sim`), whether the simulation replays recorded profiles on the file's device
// or generates them for a GPU. Builds without libtorch compare the shared validation itself.

#include "tandem/runtime/workload_validation.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/sim/workload_sim.hpp"
#if TANDEM_HAVE_TORCH
#include "tandem/runtime/session.hpp"
#endif

namespace tandem::runtime {
namespace {

const std::string base = R"([device]
capacity = "2GiB"
budget = "1GiB"

[policy]
name = "temporal"

[[job]]
name = "a"
model = "mlp"
batch_size = 8
learning_rate = 0.01
iterations = 10
arrival = "0s"
[job.model_options]
hidden = 64
)";

/// `text` with its first `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string with(const std::string& from, const std::string& to) {
  return replaced(base, from, to);
}

/// "accepted", or the config_error's message.
std::string verdict(const std::function<void()>& check) {
  try {
    check();
  } catch (const config_error& e) {
    return e.what();
  }
  return "accepted";
}

std::string run_side(const std::string& text, const policy_overrides& overrides) {
  return verdict([&] {
#if TANDEM_HAVE_TORCH
    const auto spec = parse_workload(text, "w.toml", training_vocabulary());
    run_options options;
    options.overrides = overrides;
    validate_training_workload(spec, options);
#else
    validate_workload(parse_workload(text, "w.toml", {}), overrides);
#endif
  });
}

/// Profiles recorded (so to speak) for every job of `spec`, as `tandem profile` writes them.
profile_set recorded_for(const workload& spec) {
  profile_set profiles;
  profiles.workload = spec.source;
  for (const auto& job : spec.jobs) {
    job_profile profile;
    profile.name = job.name;
    profile.model = job.model;
    profile.batch_size = job.batch_size;
    profile.completed = true;
    profile.last_iteration = iteration_detail{};
    profiles.jobs.push_back(profile);
  }
  return profiles;
}

/// On the file's own device, from recorded profiles (`gpu` empty), or generated for `gpu`.
std::string sim_side(const std::string& text, const policy_overrides& overrides,
                     const std::optional<std::string>& gpu) {
  return verdict([&] {
    sim::sim_setup setup;
    setup.gpu = gpu;
    setup.overrides = overrides;
    profile_set profiles;
    if (!gpu) setup.recorded = &profiles;
    const auto spec = parse_workload(text, "w.toml", sim::simulation_vocabulary(setup));
    profiles = recorded_for(spec);
    sim::validate_simulation(spec, setup);
  });
}

struct validation_case {
  const char* what;
  std::string text;
  policy_overrides overrides;
  const char* expected;  ///< in the message, or "accepted"
  /// The message names the capacity, which a GPU's replaces.
  bool names_the_capacity = false;
};

std::vector<validation_case> cases() {
  policy_overrides no_budget;
  no_budget.budget = 0;
  policy_overrides too_much;
  too_much.budget = 3 * GiB;
  policy_overrides one_byte;
  one_byte.budget = 1;
  policy_overrides misspelt_planner;
  misspelt_planner.planner = "capuchn";
  return {
      {"a valid workload", base, {}, "accepted"},
      {"a NaN learning rate",
       with("learning_rate = 0.01", "learning_rate = nan"),
       {},
       "w.toml:12: learning_rate must be a positive finite number, such as 0.01, not nan"},
      {"hidden beyond the table",
       with("hidden = 64", "hidden = 100000000"),
       {},
       "w.toml:16: job 'a': model 'mlp': option hidden must be a whole number from 1 to 16384, "
       "not 100000000"},
      {"a misspelt option",
       with("hidden = 64", "hiden = 64"),
       {},
       "w.toml:16: model 'mlp' has no option 'hiden'; did you mean 'hidden'?"},
      {"an option that is not a number",
       with("hidden = 64", "seed = \"x\""),
       {},
       "w.toml:16: model option seed must be a number, not the string \"x\""},
      {"a fixed depth changed",
       replaced(with("model = \"mlp\"", "model = \"resnet20\""), "hidden = 64", "depth = 56"),
       {},
       "w.toml:8: job 'a': resnet20 has depth 20 but model_options.depth is 56"},
      {"heads that do not divide hidden",
       with("model = \"mlp\"", "model = \"bert_mini\"") + "heads = 5\n",
       {},
       "w.toml:8: job 'a': bert_mini splits hidden = 64 across heads = 5, so heads must divide "
       "hidden"},
      {"vgg16's classifier width, read by both",
       replaced(with("model = \"mlp\"", "model = \"vgg16\""), "hidden = 64", "hidden = 4096"),
       {},
       "accepted"},
      {"a region larger than the budget",
       with("budget = \"1GiB\"", "budget = \"1GiB\"\nregion_size = \"4GiB\""),
       {},
       "w.toml:1: the region size 4.00 GiB is larger than the budget 1.00 GiB"},
      {"a region that is not a power of two",
       with("budget = \"1GiB\"", "budget = \"1GiB\"\nregion_size = \"3MiB\""),
       {},
       "w.toml:1: region_size must be a power of two of at least 2 MiB"},
      {"budget = 0 in the file",
       with("budget = \"1GiB\"", "budget = \"0\""),
       {},
       "w.toml:3: budget must be above 0; to let the jobs hold the whole capacity (2.00 GiB), "
       "leave budget out"},
      {"--budget 0", base, no_budget,
       "--budget 0 B must be above 0 and at most the device capacity 2.00 GiB of w.toml", true},
      {"--budget above the capacity", base, too_much,
       "--budget 3.00 GiB must be above 0 and at most the device capacity 2.00 GiB", true},
      {"an arrival past the horizon",
       with("arrival = \"0s\"", "arrival = \"1e10s\""),
       {},
       "w.toml:14: arrival 1e+10 s is not within the horizon tandem runs and simulates"},
      {"a duration past the horizon",
       with("iterations = 10", "duration = \"200h\""),
       {},
       "w.toml:13: duration 720000 s is not within the horizon"},
      {"iterations beyond the limit",
       with("iterations = 10", "iterations = 9223372036854775807"),
       {},
       "w.toml:13: iterations must be from 1 to 1000000000, not 9223372036854775807"},
      {"a batch beyond the limit",
       with("batch_size = 8", "batch_size = 100000"),
       {},
       "w.toml:11: batch_size must be at most 65536, not 100000"},
      {"a footprint planner and its budget",
       with("iterations = 10", "iterations = 10\nplanner = \"capuchin\"\nplan_budget = \"75%\""),
       {},
       "accepted"},
      {"an unknown planner",
       with("iterations = 10", "iterations = 10\nplanner = \"chekpoint\""),
       {},
       "w.toml:14: unknown planner 'chekpoint'; did you mean 'checkpoint'? (known: none, "},
      {"a plan budget above 100%",
       with("iterations = 10", "iterations = 10\nplan_budget = \"120%\""),
       {},
       "w.toml:14: plan_budget in [[job]] #1 ('a'): the plan budget '120%' must be above 0% and "
       "at most 100%"},
      {"--planner misspelt", base, misspelt_planner,
       "--planner: unknown planner 'capuchn'; did you mean 'capuchin'?"},
      {"a --budget below one region", base, one_byte, "--budget 1 B is below one region ("},
      {"an option the policy does not take",
       with("name = \"temporal\"", "name = \"temporal\"\nquantum = 3"),
       {},
       "w.toml:7: policy 'temporal' has no option 'quantum'; it takes none"},
  };
}

TEST(WorkloadValidation, RunAndSimGiveTheSameVerdictAndMessage) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.what);
    const auto run = run_side(c.text, c.overrides);
    EXPECT_NE(run.find(c.expected), std::string::npos) << run;
    EXPECT_EQ(sim_side(c.text, c.overrides, std::nullopt), run);
    if (!c.names_the_capacity) {
      EXPECT_EQ(sim_side(c.text, c.overrides, "v100"), run);
    }
  }
}

TEST(WorkloadValidation, APolicyOptionThatIsNoNumberNamesOnlyItsOwnLine) {
  const auto text = with("name = \"temporal\"", "name = \"scrooge\"\nramp_start = \"x\"");
  const auto message = run_side(text, {});
  EXPECT_EQ(message.rfind("w.toml:7: policy option ramp_start must be a number", 0), 0u) << message;
  EXPECT_EQ(sim_side(text, {}, std::nullopt), message);
}

TEST(WorkloadValidation, ABatchOrCountSetAfterReadingIsCheckedToo) {
  // maxbatch and --sweep-batch change jobs after the file was read.
  auto spec = parse_workload(base, "w.toml", {});
  spec.jobs.front().batch_size = 1 << 20;
  EXPECT_NE(verdict([&] {
              validate_workload(spec, {});
            }).find("w.toml:8: job 'a': batch_size must be from 1 to 65536, not 1048576"),
            std::string::npos);
  spec = parse_workload(base, "w.toml", {});
  spec.jobs.front().iterations = std::int64_t{1} << 40;
  EXPECT_NE(verdict([&] {
              validate_workload(spec, {});
            }).find("job 'a': iterations must be from 1 to 1000000000"),
            std::string::npos);
  sim::sim_setup sweep;
  sweep.gpu = "v100";
  sweep.batch_size = 100000;
  EXPECT_NE(verdict([&] {
              sim::validate_simulation(parse_workload(base, "w.toml", {}), sweep);
            }).find("batch_size must be from 1 to 65536, not 100000"),
            std::string::npos);
}

TEST(WorkloadValidation, TheDefaultRegionMustFitTheBudgetToo) {
  const auto text = with("capacity = \"2GiB\"\nbudget = \"1GiB\"", "capacity = \"32MiB\"");
  const auto message = run_side(text, {});
  EXPECT_NE(message.find("the region size 64.00 MiB (the default) is larger than the budget "
                         "32.00 MiB"),
            std::string::npos)
      << message;
  EXPECT_EQ(sim_side(text, {}, std::nullopt), message);
}

}  // namespace
}  // namespace tandem::runtime
