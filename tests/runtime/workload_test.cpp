// Workload files: what is accepted, and that every mistake names the file, the line and a fix.

#include "tandem/runtime/workload.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::runtime {
namespace {

const workload_vocabulary vocabulary{{"mlp", "resnet20", "lstm"}, {"temporal", "spatial"}};

constexpr const char* valid = R"(
[device]
capacity = "2GiB"
budget = 1073741824

[policy]
name = "temporal"
quantum = 3

[[job]]
name = "a"
model = "resnet20"
batch_size = 32
iterations = 10
[job.model_options]
image_side = 16

[[job]]
name = "b"
model = "lstm"
batch_size = 8
optimizer = "adam"
learning_rate = 0.001
duration = "90s"
arrival = "500ms"
priority = 2
threads = 2
)";

TEST(Workload, ReadsEveryField) {
  const auto w = parse_workload(valid, "w.toml", vocabulary);
  EXPECT_EQ(w.device.kind, device::backend_kind::cpu);
  EXPECT_EQ(w.device.capacity, 2 * GiB);
  EXPECT_EQ(w.device.budget, GiB);
  EXPECT_EQ(w.policy.name, "temporal");
  EXPECT_EQ(std::get<std::int64_t>(w.policy.options.at("quantum").value), 3);
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[0].model, "resnet20");
  EXPECT_EQ(w.jobs[0].iterations, 10);
  EXPECT_EQ(w.jobs[0].optimizer, "sgd");
  EXPECT_EQ(std::get<std::int64_t>(w.jobs[0].model_options.at("image_side").value), 16);
  EXPECT_EQ(w.jobs[0].line, 10u);
  EXPECT_EQ(w.jobs[1].optimizer, "adam");
  EXPECT_DOUBLE_EQ(*w.jobs[1].duration_s, 90.0);
  EXPECT_DOUBLE_EQ(w.jobs[1].arrival_s, 0.5);
  EXPECT_EQ(w.jobs[1].priority, 2);
  EXPECT_EQ(w.jobs[1].threads, 2);
}

/// Replaces the first occurrence of `from` in the valid file and expects an error containing
/// every needle.
void expect_rejected(const std::string& from, const std::string& to,
                     std::initializer_list<const char*> needles) {
  std::string text = valid;
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  try {
    (void)parse_workload(text, "w.toml", vocabulary);
    ADD_FAILURE() << "accepted: " << to;
  } catch (const config_error& e) {
    for (const char* needle : needles) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "'" << needle << "' missing from: " << e.what();
    }
  }
}

TEST(Workload, RejectsMistakesWithFileLineAndHint) {
  expect_rejected("batch_size = 32", "batch_sise = 32",
                  {"w.toml:13:", "unknown key 'batch_sise'", "did you mean 'batch_size'"});
  expect_rejected("batch_size = 32", "batch_size = 0", {"w.toml:13:", "at least 1"});
  expect_rejected("batch_size = 32", "batch_size = \"32\"", {"w.toml:13:", "whole number"});
  expect_rejected("model = \"resnet20\"", "model = \"resnet21\"",
                  {"w.toml:12:", "unknown model 'resnet21'", "did you mean 'resnet20'", "known:"});
  expect_rejected("name = \"temporal\"", "name = \"temporl\"",
                  {"w.toml:7:", "unknown policy", "did you mean 'temporal'"});
  expect_rejected("budget = 1073741824", "budget = \"3GiB\"",
                  {"w.toml:4:", "exceeds capacity", "lower the budget"});
  expect_rejected("capacity = \"2GiB\"", "capacity = \"2XB\"",
                  {"w.toml:3:", "cannot read the size"});
  expect_rejected("iterations = 10", "", {"w.toml:10:", "exactly one of iterations"});
  expect_rejected("duration = \"90s\"", "duration = \"90 parsecs\"", {"w.toml:", "duration"});
  expect_rejected("optimizer = \"adam\"", "optimizer = \"adamw\"", {"unknown optimizer 'adamw'"});
  expect_rejected("threads = 2", "threads = 0", {"threads must be between 1 and 1024"});
  expect_rejected("name = \"b\"", "name = \"a\"", {"two jobs are named 'a'"});
  expect_rejected("[device]", "[devise]", {"unknown key 'devise'", "did you mean 'device'"});
  expect_rejected("quantum = 3", "quantum = [3]", {"w.toml:8:", "number, a boolean or a string"});
  expect_rejected("image_side = 16", "image_side = = 16", {"w.toml:16:", "not valid TOML"});
}

// Issue 14: values a file can hold but no run can use are refused where they are written.
TEST(Workload, RejectsValuesNoRunCanUseWithWhatToWrite) {
  expect_rejected("learning_rate = 0.001", "learning_rate = nan",
                  {"w.toml:23:", "learning_rate must be a positive finite number", "not nan"});
  expect_rejected("learning_rate = 0.001", "learning_rate = inf", {"w.toml:23:", "not inf"});
  expect_rejected("budget = 1073741824", "budget = \"0\"",
                  {"w.toml:4:", "budget must be above 0",
                   "to let the jobs hold the whole capacity (2.00 GiB), leave budget out"});
  expect_rejected("budget = 1073741824", "budget = 0", {"w.toml:4:", "budget must be above 0"});
  expect_rejected("capacity = \"2GiB\"", "capacity = \"2GiB\"\nregion_size = 0",
                  {"w.toml:4:", "region_size must be above 0; leave it out"});
  expect_rejected("capacity = \"2GiB\"", "capacity = \"2GiB\"\ncopy_bandwidth = nan",
                  {"w.toml:4:", "copy_bandwidth must be \"auto\"", "\"12GB/s\""});
  expect_rejected("capacity = \"2GiB\"", "capacity = \"2GiB\"\ncopy_bandwidth = \"12 parsecs\"",
                  {"w.toml:4:", "copy_bandwidth must be"});
  expect_rejected("batch_size = 32", "batch_size = 100000",
                  {"w.toml:13:", "batch_size must be at most 65536, not 100000"});
}

TEST(Workload, ReadsAFootprintPlannerAndItsBudget) {
  const auto read = [](const std::string& keys) {
    std::string text = valid;
    text.replace(text.find("iterations = 10"), 15, "iterations = 10\n" + keys);
    return parse_workload(text, "w.toml", vocabulary).jobs[0];
  };
  const auto none = read("");
  EXPECT_FALSE(none.planner.has_value());
  EXPECT_FALSE(none.plan_budget.has_value());
  const auto job = read("planner = \"capuchin\"\nplan_budget = \"75%\"");
  EXPECT_EQ(job.planner, "capuchin");
  EXPECT_EQ(job.planner_line, 15u);
  ASSERT_TRUE(job.plan_budget.has_value());
  EXPECT_DOUBLE_EQ(job.plan_budget->percent, 75.0);
  EXPECT_EQ(job.plan_budget->bytes_for(1000), 750u);
  EXPECT_EQ(read("plan_budget = \"1GiB\"").plan_budget->bytes, GiB);
  // A plan budget without a planner asks for the default one.
  EXPECT_EQ(read("plan_budget = \"1GiB\"").planner, std::string(footprint::default_planner));
  EXPECT_EQ(read("plan_budget = 4096").plan_budget->bytes, 4096u);
  EXPECT_EQ(read("plan_budget = \"100%\"").plan_budget->bytes_for(1000), 1000u);
  EXPECT_EQ(read("plan_budget = 4096").plan_budget->bytes_for(1000), 4096u);
}

TEST(Workload, RejectsABadPlannerOrPlanBudget) {
  const std::string at = "iterations = 10";
  expect_rejected(
      at, "iterations = 10\nplanner = \"capuchn\"",
      {"w.toml:15:", "unknown planner 'capuchn'", "did you mean 'capuchin'", "known: none, "});
  expect_rejected(at, "iterations = 10\nplanner = 3", {"w.toml:15:", "planner", "string"});
  for (const char* bad : {"\"0%\"", "\"120%\"", "\"-5%\""}) {
    expect_rejected(at, std::string("iterations = 10\nplan_budget = ") + bad,
                    {"w.toml:15:", "plan_budget in [[job]] #1 ('a')", "above 0% and at most 100%"});
  }
  expect_rejected(at, "iterations = 10\nplan_budget = \"lots\"",
                  {"w.toml:15:", "cannot read the plan budget 'lots'", "\"75%\"", "\"1GiB\""});
  expect_rejected(at, "iterations = 10\nplan_budget = \"x%\"",
                  {"w.toml:15:", "cannot read the plan budget 'x%'"});
  expect_rejected(at, "iterations = 10\nplan_budget = 0", {"w.toml:15:", "must be above 0"});
  expect_rejected(at, "iterations = 10\nplan_budget = \"0GiB\"", {"w.toml:15:", "above 0"});
  expect_rejected(at, "iterations = 10\nplan_budget = 0.5", {"w.toml:15:", "plan_budget", "75%"});
}

TEST(Workload, CopyBandwidthIsAutoByDefaultOrMemcpyOrARate) {
  const auto with = [](const std::string& line) {
    const std::string capacity = "capacity = \"2GiB\"";
    auto text = std::string(valid);
    text.replace(text.find(capacity), capacity.size(), capacity + "\n" + line);
    return parse_workload(text, "w.toml", vocabulary).device.copy_bandwidth;
  };
  EXPECT_EQ(parse_workload(valid, "w.toml", vocabulary).device.copy_bandwidth.how,
            copy_rate::mode::matched);
  EXPECT_EQ(with("copy_bandwidth = \"auto\"").how, copy_rate::mode::matched);
  EXPECT_EQ(with("copy_bandwidth = \"memcpy\"").how, copy_rate::mode::memcpy);
  EXPECT_EQ(with("copy_bandwidth = 0").how, copy_rate::mode::memcpy);
  EXPECT_EQ(with("copy_bandwidth = \"12GB/s\""), (copy_rate{copy_rate::mode::fixed, 12e9}));
  EXPECT_EQ(with("copy_bandwidth = \"512 MiB/s\""),
            (copy_rate{copy_rate::mode::fixed, 512.0 * 1024 * 1024}));
  EXPECT_EQ(with("copy_bandwidth = 1e9"), (copy_rate{copy_rate::mode::fixed, 1e9}));
}

TEST(Workload, ACudaDeviceTakesItsIndexAndInflightLimitAndTheCpuBackendRefusesThem) {
  const std::string capacity = "capacity = \"2GiB\"";
  const auto cuda = [&](const std::string& lines) {
    auto text = std::string(valid);
    text.replace(text.find(capacity), capacity.size(),
                 "kind = \"cuda\"\n" + capacity + "\n" + lines);
    return parse_workload(text, "w.toml", vocabulary).device;
  };
  const auto device = cuda("index = 1\ninflight_limit = 32");
  EXPECT_EQ(device.kind, device::backend_kind::cuda);
  EXPECT_EQ(device.index, 1);
  EXPECT_EQ(device.inflight_limit, 32u);
  EXPECT_EQ(cuda("").inflight_limit, 0u);
  const auto refused = [&](const std::string& lines, const std::string& message) {
    try {
      static_cast<void>(cuda(lines));
      ADD_FAILURE() << lines << " was accepted";
    } catch (const config_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused("index = -1", "index must be a CUDA device ordinal");
  refused("inflight_limit = -3", "inflight_limit must be 0 (no limit)");
  refused("copy_bandwidth = \"12GB/s\"", "a CUDA device copies over its own bus");
  expect_rejected(capacity, capacity + "\nindex = 0", {"w.toml:4:", "index picks a CUDA device"});
  expect_rejected(capacity, capacity + "\ninflight_limit = 8",
                  {"w.toml:4:", "inflight_limit bounds how far", "remove it"});
}

TEST(Workload, RejectsCountsAndTimesBeyondTheLimits) {
  expect_rejected("iterations = 10", "iterations = 9223372036854775807",
                  {"w.toml:14:", "iterations must be from 1 to 1000000000, not 9223372036854775807",
                   "write duration = TIME instead"});
  expect_rejected("iterations = 10", "iterations = 1000000001", {"w.toml:14:", "from 1 to"});
  EXPECT_NO_THROW(
      (void)parse_workload(std::string(valid).replace(std::string(valid).find("iterations = 10"),
                                                      15, "iterations = 1000000000"),
                           "w.toml", vocabulary));
  expect_rejected(
      "arrival = \"500ms\"", "arrival = \"1e10s\"",
      {"w.toml:25:", "arrival 1e+10 s is not within the horizon", "from 0 to 604800 s (7 days)"});
  expect_rejected("arrival = \"500ms\"", "arrival = nan", {"w.toml:25:", "arrival nan s"});
  expect_rejected("arrival = \"500ms\"", "arrival = -1", {"w.toml:25:", "arrival -1 s"});
  expect_rejected("duration = \"90s\"", "duration = \"200h\"",
                  {"w.toml:24:", "duration 720000 s is not within the horizon"});
  expect_rejected("budget = 1073741824",
                  "budget = 1073741824\nbudget_schedule = [{ at = \"169h\", budget = \"50%\" }]",
                  {"w.toml:5:", "budget_schedule: at 608400 s is not within the horizon"});
}

TEST(Workload, RejectsMoreJobsThanOneWorkloadTakes) {
  std::string text = "[device]\ncapacity = \"1GiB\"\n[policy]\nname = \"spatial\"\n";
  for (std::size_t i = 0; i <= 10'000; ++i) {
    text += "[[job]]\nname = \"j" + std::to_string(i) +
            "\"\nmodel = \"mlp\"\nbatch_size = 1\niterations = 1\n";
  }
  try {
    (void)parse_workload(text, "many.toml", vocabulary);
    FAIL() << "accepted 10001 jobs";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("the workload has 10001 jobs; tandem takes at most 10000 "
                                         "in one workload: split it into several"),
              std::string::npos)
        << e.what();
  }
}

TEST(Workload, ReadsABudgetScheduleInSizesOrPercentages) {
  std::string text = valid;
  text.replace(text.find("budget = 1073741824"), 19,
               "budget = \"70%\"\nbudget_schedule = [{ at = \"10s\", budget = \"50%\" }, "
               "{ at = 20, budget = \"1.5GiB\" }]");
  // The device budget itself takes sizes only; percentages are for the schedule.
  EXPECT_THROW((void)parse_workload(text, "w.toml", vocabulary), config_error);
  text.replace(text.find("budget = \"70%\""), 14, "budget = \"1GiB\"");
  const auto w = parse_workload(text, "w.toml", vocabulary);
  ASSERT_EQ(w.device.budget_schedule.size(), 2u);
  EXPECT_DOUBLE_EQ(w.device.budget_schedule[0].at_s, 10.0);
  EXPECT_EQ(w.device.budget_schedule[0].bytes, GiB);  // 50% of 2 GiB
  EXPECT_DOUBLE_EQ(w.device.budget_schedule[1].at_s, 20.0);
  EXPECT_EQ(w.device.budget_schedule[1].bytes, 3 * GiB / 2);
}

TEST(Workload, RejectsABadBudgetSchedule) {
  const auto with = [](const std::string& schedule) {
    return "budget = 1073741824\nbudget_schedule = " + schedule;
  };
  expect_rejected("budget = 1073741824", with("[{ at = \"5s\", budget = \"150%\" }]"),
                  {"w.toml:5:", "percentage '150%'"});
  expect_rejected("budget = 1073741824", with("[{ at = \"5s\", budget = \"3GiB\" }]"),
                  {"w.toml:5:", "at most the capacity"});
  expect_rejected("budget = 1073741824",
                  with("[{ at = \"5s\", budget = \"1GiB\" }, { at = \"2s\", budget = \"1GiB\" }]"),
                  {"times must increase"});
  expect_rejected("budget = 1073741824", with("[{ at = \"5s\", budgets = \"1GiB\" }]"),
                  {"unknown key 'budgets'", "did you mean 'budget'"});
  expect_rejected("budget = 1073741824", with("\"50%\""), {"must be a list"});
}

constexpr const char* serving = R"(
[device]
capacity = "1GiB"

[policy]
name = "spatial"

[[job]]
name = "train"
model = "mlp"
batch_size = 8
iterations = 5

[[job]]
name = "serve"
kind = "inference"
model = "mlp"
batch_size = 1
rate = 50
requests = 20
request_seed = 7

[[job]]
name = "timed"
kind = "inference"
model = "lstm"
batch_size = 2
rate = 12.5
duration = "2s"
)";

TEST(Workload, ReadsInferenceJobs) {
  const auto w = parse_workload(serving, "s.toml", vocabulary);
  ASSERT_EQ(w.jobs.size(), 3u);
  EXPECT_EQ(w.jobs[0].kind, job_kind::training);
  EXPECT_EQ(w.jobs[0].request_rate, 0.0);
  const auto& served = w.jobs[1];
  EXPECT_EQ(served.kind, job_kind::inference);
  EXPECT_DOUBLE_EQ(served.request_rate, 50.0);
  EXPECT_EQ(served.iterations, 20);  // requests are stored as iterations
  EXPECT_FALSE(served.duration_s);
  EXPECT_EQ(served.request_seed, 7u);
  EXPECT_EQ(served.batch_size, 1);
  const auto& timed = w.jobs[2];
  EXPECT_EQ(timed.kind, job_kind::inference);
  EXPECT_DOUBLE_EQ(timed.request_rate, 12.5);
  EXPECT_FALSE(timed.iterations);
  EXPECT_DOUBLE_EQ(*timed.duration_s, 2.0);
  // By default the job's index in the file: identical models get different request streams.
  EXPECT_EQ(timed.request_seed, 2u);
}

TEST(Workload, AJobKindIsTrainingByDefaultAndOtherKindsAreRefused) {
  std::string text = serving;
  text.replace(text.find("name = \"train\""), 14, "name = \"train\"\nkind = \"training\"");
  EXPECT_EQ(parse_workload(text, "s.toml", vocabulary).jobs[0].kind, job_kind::training);
  text.replace(text.find("kind = \"training\""), 17, "kind = \"inferense\"");
  try {
    (void)parse_workload(text, "s.toml", vocabulary);
    ADD_FAILURE() << "accepted kind = \"inferense\"";
  } catch (const config_error& e) {
    const std::string message = e.what();
    for (const char* needle : {"s.toml:10:", "unknown job kind 'inferense'",
                               "did you mean 'inference'", "allowed: training, inference"}) {
      EXPECT_NE(message.find(needle), std::string::npos) << needle << " missing from " << message;
    }
  }
}

/// Replaces the first occurrence of `from` in the inference workload and expects an error
/// containing every needle.
void expect_serving_rejected(const std::string& from, const std::string& to,
                             std::initializer_list<const char*> needles) {
  std::string text = serving;
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  try {
    (void)parse_workload(text, "s.toml", vocabulary);
    ADD_FAILURE() << "accepted: " << to;
  } catch (const config_error& e) {
    for (const char* needle : needles) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "'" << needle << "' missing from: " << e.what();
    }
  }
}

TEST(Workload, RejectsInferenceMistakesWithFileLineAndHint) {
  // Keys of training jobs: an inference job does not train.
  expect_serving_rejected("requests = 20", "iterations = 20",
                          {"s.toml:20:", "does not train", "no iterations", "requests = COUNT"});
  expect_serving_rejected(
      "rate = 50", "rate = 50\noptimizer = \"adam\"",
      {"s.toml:20:", "does not train", "no optimizer", "remove it", "requests"});
  expect_serving_rejected("rate = 50", "rate = 50\nlearning_rate = 0.1",
                          {"s.toml:20:", "does not train", "no learning_rate", "remove it"});
  expect_serving_rejected("rate = 50", "rate = 50\nplanner = \"capuchin\"",
                          {"s.toml:20:", "does not train", "no planner", "remove it"});
  // rate: required, a number above 0.
  expect_serving_rejected("rate = 50\n", "",
                          {"s.toml:14:", "('serve')", "needs rate = requests per second"});
  expect_serving_rejected("rate = 50", "rate = 0", {"s.toml:19:", "rate must be", "above 0"});
  expect_serving_rejected("rate = 50", "rate = -3", {"s.toml:19:", "above 0"});
  expect_serving_rejected("rate = 50", "rate = \"fast\"", {"s.toml:19:", "must be a number"});
  // requests | duration: exactly one.
  expect_serving_rejected("requests = 20\n", "",
                          {"s.toml:14:", "exactly one of requests", "duration"});
  expect_serving_rejected("requests = 20", "requests = 20\nduration = \"5s\"",
                          {"s.toml:14:", "exactly one of requests"});
  expect_serving_rejected("requests = 20", "requests = 0",
                          {"s.toml:20:", "requests must be from 1 to"});
  expect_serving_rejected("requests = 20", "requests = 2.5", {"s.toml:20:", "whole number"});
  expect_serving_rejected("duration = \"2s\"", "duration = \"-2s\"",
                          {"s.toml:", "duration must be positive"});
  // request_seed: a whole number >= 0.
  expect_serving_rejected("request_seed = 7", "request_seed = -1",
                          {"s.toml:21:", "request_seed must be", "0 or more"});
  expect_serving_rejected("request_seed = 7", "request_seed = 1.5", {"s.toml:21:", "whole number"});
  // Keys of inference jobs on a training job.
  expect_serving_rejected("iterations = 5", "iterations = 5\nrate = 10",
                          {"s.toml:13:", "only inference jobs take rate", "kind = \"inference\""});
  expect_serving_rejected("iterations = 5", "requests = 5",
                          {"s.toml:12:", "only inference jobs take requests"});
  expect_serving_rejected("iterations = 5", "iterations = 5\nrequest_seed = 1",
                          {"s.toml:13:", "only inference jobs take request_seed"});
}

TEST(Workload, MissingSectionsAreNamed) {
  EXPECT_THROW((void)parse_workload("[policy]\nname = \"temporal\"\n", "x.toml", vocabulary),
               config_error);
  try {
    (void)parse_workload("[device]\ncapacity = \"1GiB\"\n[policy]\nname = \"spatial\"\n", "x.toml",
                         vocabulary);
    FAIL() << "accepted a workload without jobs";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("no jobs"), std::string::npos) << e.what();
  }
}

constexpr const char* device_table = "[device]\ncapacity = \"1GiB\"\nbudget = \"512MiB\"\n";

TEST(Workload, AJobWrittenAsOneTableIsToldToUseTwoBrackets) {
  try {
    (void)parse_workload(
        std::string(device_table) +
            "[policy]\nname = \"temporal\"\n[job]\nmodel = \"mlp\"\nbatch_size = 4\n",
        "x.toml", vocabulary);
    FAIL() << "accepted [job]";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("x.toml:6:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[[job]]"), std::string::npos) << e.what();
  }
}

TEST(Workload, AJobNameIsOneLineOfText) {
  for (const char* name : {R"("")", R"("a\nb")", R"("tab\there")"}) {
    SCOPED_TRACE(name);
    try {
      (void)parse_workload(std::string(device_table) +
                               "[policy]\nname = \"temporal\"\n[[job]]\nname = " + name +
                               "\nmodel = \"mlp\"\nbatch_size = 4\niterations = 2\n",
                           "x.toml", vocabulary);
      FAIL() << "accepted the name";
    } catch (const config_error& e) {
      EXPECT_NE(std::string(e.what()).find("x.toml:7:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("line breaks"), std::string::npos) << e.what();
    }
  }
  // Commas and quotes are text like any other (the timelines quote them).
  const auto w = parse_workload(
      std::string(device_table) +
          "[policy]\nname = \"temporal\"\n[[job]]\nname = 'a,\"b\"'\nmodel = \"mlp\"\n"
          "batch_size = 4\niterations = 2\n",
      "x.toml", vocabulary);
  EXPECT_EQ(w.jobs.at(0).name, "a,\"b\"");
}

TEST(Workload, AMissingFileIsAClearError) {
  try {
    (void)load_workload("/nonexistent/w.toml", vocabulary);
    FAIL() << "opened a missing file";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open the workload file"), std::string::npos);
  }
}

TEST(Workload, EveryShippedExampleParses) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(TANDEM_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW((void)load_workload(entry.path(), workload_vocabulary{{}, {}}));
    ++count;
  }
  EXPECT_GE(count, 1u);
}

}  // namespace
}  // namespace tandem::runtime
