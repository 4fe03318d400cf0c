// The library API on real libtorch loops written here (not tandem's zoo): jobs join from their
// own threads, the policy gates their iterations, a failing job leaves its neighbour bitwise
// as it would be alone, bad use gets clear errors, stop() keeps what was measured.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tandem/api/runtime.hpp"

namespace {

using tandem::api::job;
using tandem::api::runtime;
using tandem::runtime::job_status;

struct Mlp : torch::nn::Module {
  Mlp()
      : hidden(register_module("hidden", torch::nn::Linear(64, 128))),
        out(register_module("out", torch::nn::Linear(128, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return out->forward(torch::relu(hidden->forward(x)));
  }
  torch::nn::Linear hidden;
  torch::nn::Linear out;
};

/// What a user's loop looks like: `fail_at` >= 0 throws inside that iteration.
std::vector<double> train(runtime& rt, const std::string& name, int iterations, int fail_at = -1) {
  std::vector<double> losses;
  auto j = rt.join(
      name, {.model = "mlp-test", .batch_size = 16, .iterations = iterations, .priority = 0});
  std::shared_ptr<Mlp> net;
  std::unique_ptr<torch::optim::SGD> optimizer;
  {
    // libtorch's default generator is the process's: seeding and drawing the initial weights is
    // one step, or two threads would interleave their draws.
    static std::mutex initialization;
    const std::lock_guard lock(initialization);
    torch::manual_seed(3);
    auto persistent = j.persistent();
    net = std::make_shared<Mlp>();
    optimizer =
        std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.05));
  }
  auto generator = at::detail::createCPUGenerator(11);
  const auto x = torch::randn({16, 64}, generator);
  const auto y = torch::randint(0, 4, {16}, generator);
  for (int i = 0; i < iterations; ++i) {
    auto step = j.iteration();
    optimizer->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    if (i == fail_at) throw std::runtime_error("injected failure");
    loss.backward();
    optimizer->step();
    losses.push_back(loss.item<double>());
    step.report_loss(losses.back());
  }
  return losses;
}

tandem::api::runtime_options options(const std::string& policy,
                                     const std::string& budget = "64MiB") {
  tandem::api::runtime_options o;
  o.budget = budget;
  o.region_size = "2MiB";
  o.policy = policy;
  o.expected_jobs = 2;
  return o;
}

const tandem::runtime::job_result& named(const tandem::runtime::run_result& run,
                                         const std::string& name) {
  for (const auto& j : run.jobs) {
    if (j.name == name) return j;
  }
  throw std::runtime_error("no job " + name);
}

TEST(RuntimeApi, TwoUserLoopsTrainSideBySideWithinTheBudget) {
  for (const std::string policy : {"scrooge", "temporal", "nodegroup", "spatial"}) {
    SCOPED_TRACE(policy);
    runtime rt(options(policy));
    std::vector<double> a;
    std::vector<double> b;
    std::thread first([&] { a = train(rt, "a", 12); });
    std::thread second([&] { b = train(rt, "b", 12); });
    first.join();
    second.join();
    const auto run = rt.results();
    ASSERT_EQ(run.jobs.size(), 2u);
    for (const auto& j : run.jobs) {
      EXPECT_EQ(j.status, job_status::completed) << j.error;
      EXPECT_EQ(j.iterations, 12);
      ASSERT_TRUE(j.first_loss && j.last_loss);
      EXPECT_LT(*j.last_loss, *j.first_loss);
      EXPECT_GT(j.persistent_bytes, 0u);
      EXPECT_GT(j.samples_per_s, 0);
    }
    EXPECT_LE(run.peak_live_bytes, run.budget_bytes);
    EXPECT_EQ(a, b);  // the same seeds: the same losses, whatever ran beside them
  }
}

TEST(RuntimeApi, AFailingJobLeavesItsNeighbourBitwiseAsItWouldBeAlone) {
  std::vector<double> alone;
  {
    runtime rt(options("scrooge"));
    alone = train(rt, "survivor", 10);
  }
  for (const std::string policy : {"scrooge", "spatial"}) {
    SCOPED_TRACE(policy);
    runtime rt(options(policy));
    std::vector<double> beside;
    std::string failure;
    std::thread survivor([&] { beside = train(rt, "survivor", 10); });
    std::thread failing([&] {
      try {
        static_cast<void>(train(rt, "failing", 10, 4));
      } catch (const std::exception& e) {
        failure = e.what();
      }
    });
    survivor.join();
    failing.join();
    EXPECT_EQ(failure, "injected failure");
    EXPECT_EQ(beside, alone);
    const auto run = rt.results();
    EXPECT_EQ(named(run, "survivor").status, job_status::completed);
    const auto& failed = named(run, "failing");
    EXPECT_EQ(failed.status, job_status::failed);
    EXPECT_EQ(failed.iterations, 4);
    EXPECT_NE(failed.error.find("iteration 4"), std::string::npos) << failed.error;
    EXPECT_TRUE(run.warnings.empty()) << run.warnings.front();
  }
}

TEST(RuntimeApi, BadOptionsAndMisuseGetClearErrors) {
  const auto message = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const tandem::error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message([] { runtime rt(tandem::api::runtime_options{}); }).find("budget is required"),
            std::string::npos);
  EXPECT_NE(message([] { runtime rt(options("scroge")); }).find("did you mean 'scrooge'"),
            std::string::npos);
  const auto unreadable = message([] { runtime rt(options("scrooge", "lots")); });
  EXPECT_NE(unreadable.find("budget"), std::string::npos) << unreadable;
  {
    auto o = options("scrooge");
    o.policy_options["no_such_option"] = 1;
    EXPECT_NE(message([&] { runtime rt(o); }).find("no option 'no_such_option'"),
              std::string::npos);
  }
  {
    auto o = options("scrooge");
    o.device = "cuda:first";
    const auto unnamed = message([&] { runtime rt(o); });
    EXPECT_NE(unnamed.find("\"cuda\" or \"cuda:N\""), std::string::npos) << unnamed;
    o.device = "tpu";
    EXPECT_NE(message([&] { runtime rt(o); }).find("unknown device kind 'tpu'"), std::string::npos);
    o.device = "cpu";
    o.inflight_limit = 8;
    EXPECT_NE(message([&] { runtime rt(o); }).find("inflight_limit bounds"), std::string::npos);
#if !defined(TANDEM_HAVE_TORCH_CUDA)
    o.inflight_limit = 0;
    o.device = "cuda:0";
    const auto cpu_only = message([&] { runtime rt(o); });
    EXPECT_NE(cpu_only.find("trains on the CPU backend only"), std::string::npos) << cpu_only;
    // The option's name, not a workload's [device] kind.
    EXPECT_NE(cpu_only.find("use device = \"cpu\""), std::string::npos) << cpu_only;
#endif
  }
  {
    const auto zero = message([] { runtime rt(options("scrooge", "0")); });
    EXPECT_NE(zero.find("budget must be greater than 0"), std::string::npos) << zero;
    EXPECT_EQ(zero.find("[device]"), std::string::npos) << zero;
    auto o = options("scrooge");
    o.capacity = "0MiB";
    const auto no_capacity = message([&] { runtime rt(o); });
    EXPECT_NE(no_capacity.find("capacity must be greater than 0"), std::string::npos)
        << no_capacity;
  }
  {
    auto o = options("static");
    o.expected_jobs = 0;
    const auto unsized = message([&] { runtime rt(o); });
    EXPECT_NE(unsized.find("expected_jobs"), std::string::npos) << unsized;
  }
  runtime rt(options("scrooge"));
  auto j = rt.join("one");
  EXPECT_NE(message([&] { static_cast<void>(rt.join("two")); }).find("already job 'one'"),
            std::string::npos);
  std::string from_other_thread;
  std::thread other([&] {
    from_other_thread = message([&] { static_cast<void>(j.iteration()); });
    EXPECT_NE(message([&] { static_cast<void>(rt.join("one")); }).find("already joined"),
              std::string::npos);
  });
  other.join();
  EXPECT_NE(from_other_thread.find("thread other than the one that joined"), std::string::npos);
  {
    auto step = j.iteration();
    EXPECT_NE(message([&] { static_cast<void>(j.iteration()); }).find("already under way"),
              std::string::npos);
  }
  j.leave();
  EXPECT_FALSE(rt.results().jobs.at(0).first_loss) << "a loop that reported no loss has none";
  EXPECT_NE(message([&] { static_cast<void>(j.iteration()); }).find("has left"), std::string::npos);
  EXPECT_NE(message([&] { rt.change_budget("1TiB"); }).find("at most the capacity"),
            std::string::npos);
}

TEST(RuntimeApi, StopEndsEveryLoopAtItsNextIterationAndKeepsWhatWasMeasured) {
  runtime rt(options("scrooge"));
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  std::vector<std::string> errors(2);
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      try {
        static_cast<void>(train(rt, "job" + std::to_string(t), 100000));
      } catch (const tandem::api::stopped& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
      ++done;
    });
  }
  while (rt.results().jobs.empty() && done == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    break;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  rt.stop();
  for (auto& thread : threads) thread.join();
  const auto run = rt.results();
  ASSERT_EQ(run.jobs.size(), 2u);
  EXPECT_TRUE(run.stopped);
  for (const auto& j : run.jobs) {
    EXPECT_EQ(j.status, job_status::stopped);
    EXPECT_GT(j.iterations, 0);
    EXPECT_LT(j.iterations, 100000);
  }
  for (const auto& e : errors) EXPECT_FALSE(e.empty());
}

TEST(RuntimeApi, ALowerBudgetWhileJobsRunMakesThemWaitNotFail) {
  runtime rt(options("scrooge", "96MiB"));
  std::thread first([&] { static_cast<void>(train(rt, "a", 30)); });
  std::thread second([&] { static_cast<void>(train(rt, "b", 30)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  rt.change_budget("4MiB");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  rt.change_budget("96MiB");
  first.join();
  second.join();
  const auto run = rt.results();
  for (const auto& j : run.jobs) EXPECT_EQ(j.status, job_status::completed) << j.error;
}

/// A user's model with batch norm, whose running statistics a forward pass updates in place.
struct NormedMlp : torch::nn::Module {
  NormedMlp()
      : hidden(register_module("hidden", torch::nn::Linear(64, 128))),
        norm(register_module("norm", torch::nn::BatchNorm1d(128))),
        out(register_module("out", torch::nn::Linear(128, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return out->forward(torch::relu(norm->forward(hidden->forward(x))));
  }
  torch::nn::Linear hidden;
  torch::nn::BatchNorm1d norm;
  torch::nn::Linear out;
};

struct restart_outcome {
  std::vector<double> losses;
  std::vector<float> running_mean;  ///< copied out: a tensor would outlive the job's memory
  int attempts = 0;
};

/// Three iterations of a user's loop through run_iteration; its second takes 4 MiB at the end of
/// its forward pass, inside the restartable part. `holder_gone`, when given, is awaited before
/// the second try of that take (the holder leaves once it sees the first cut short).
restart_outcome train_restartably(runtime& rt, std::atomic<int>* second_try_started,
                                  std::atomic<bool>* holder_gone) {
  restart_outcome outcome;
  auto j = rt.join("restarting", {.model = "normed-mlp", .batch_size = 16, .iterations = 3});
  std::shared_ptr<NormedMlp> net;
  std::unique_ptr<torch::optim::SGD> optimizer;
  {
    static std::mutex initialization;
    const std::lock_guard lock(initialization);
    torch::manual_seed(5);
    auto persistent = j.persistent();
    net = std::make_shared<NormedMlp>();
    optimizer =
        std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.05));
  }
  auto generator = at::detail::createCPUGenerator(13);
  const auto x = torch::randn({16, 64}, generator);
  const auto y = torch::randint(0, 4, {16}, generator);
  for (int i = 0; i < 3; ++i) {
    j.run_iteration([&](tandem::api::iteration_scope& step) {
      optimizer->zero_grad();
      torch::Tensor loss;
      {
        auto part = step.restartable(net.get());
        auto logits = net->forward(x);
        if (i == 1) {
          if (++outcome.attempts == 2 && second_try_started != nullptr) {
            second_try_started->store(2);
            while (!holder_gone->load()) std::this_thread::yield();
          }
          auto scratch = torch::ones({1024 * 1024});  // 4 MiB
          logits = logits + scratch.sum() * 0;
        }
        loss = torch::nn::functional::cross_entropy(logits, y);
      }
      loss.backward();
      optimizer->step();
      outcome.losses.push_back(loss.item<double>());
      step.report_loss(outcome.losses.back());
    });
  }
  const auto mean = net->norm->running_mean.contiguous();
  outcome.running_mean.assign(mean.data_ptr<float>(), mean.data_ptr<float>() + mean.numel());
  return outcome;
}

TEST(RuntimeApi, AUserLoopCutShortInItsRestartablePartRunsTheIterationAgain) {
  // 12 MiB of 2 MiB regions. A holder keeps 8 MiB between iterations and runs none; the user's
  // loop, alone mid-iteration, wants 4 MiB more than is left. Waiting beside an idle holder, it
  // lets go (a restart) rather than fail; the holder then leaves and the second try fits. The
  // rerun computes what a run never cut computes: the same losses, batch norm's statistics
  // written back.
  restart_outcome alone;
  {
    runtime rt(options("temporal", "12MiB"));
    alone = train_restartably(rt, nullptr, nullptr);
  }
  ASSERT_EQ(alone.losses.size(), 3u);
  for (const std::string policy : {"temporal", "scrooge"}) {
    SCOPED_TRACE(policy);
    runtime rt(options(policy, "12MiB"));
    std::atomic<int> second_try{0};
    std::atomic<bool> holder_gone{false};
    std::atomic<bool> holding{false};
    std::thread holder([&] {
      auto j = rt.join("holder", {.model = "blob", .batch_size = 1});
      {
        torch::Tensor blob;
        {
          auto persistent = j.persistent();
          blob = torch::ones({2 * 1024 * 1024});  // 8 MiB
        }
        holding = true;
        while (second_try.load() < 2) std::this_thread::yield();
      }
      j.leave();
      holder_gone = true;
    });
    while (!holding.load()) std::this_thread::yield();
    restart_outcome cut;
    std::thread user([&] { cut = train_restartably(rt, &second_try, &holder_gone); });
    user.join();
    holder.join();
    EXPECT_EQ(cut.attempts, 2);
    EXPECT_EQ(cut.losses, alone.losses);
    EXPECT_EQ(cut.running_mean, alone.running_mean);
    const auto run = rt.results();
    const auto& restarted = named(run, "restarting");
    EXPECT_EQ(restarted.status, job_status::completed) << restarted.error;
    EXPECT_EQ(restarted.iterations, 3);
    EXPECT_EQ(restarted.restarts, 1);
    EXPECT_EQ(restarted.restarted_attempts.size(), 1u);
    EXPECT_LE(run.peak_reserved_bytes, 12u << 20);
  }
}

}  // namespace

// The capacity defaults to the budget, in whole regions: a budget of 9 MiB with 2 MiB regions
// once failed with "the budget exceeds the capacity rounded to whole regions".
TEST(RuntimeApi, ABudgetThatIsNoMultipleOfTheRegionSizeIsTakenAsGiven) {
  runtime rt(options("scrooge", "9MiB"));
  const auto losses = train(rt, "a", 2);
  const auto run = rt.results();
  EXPECT_EQ(run.budget_bytes, 9 * tandem::MiB);
  EXPECT_EQ(named(run, "a").status, job_status::completed);
  EXPECT_EQ(losses.size(), 2u);
}

namespace passive {

struct Deep : torch::nn::Module {
  Deep() {
    for (int i = 0; i < 4; ++i)
      layers.push_back(register_module("l" + std::to_string(i), torch::nn::Linear(128, 128)));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto& layer : layers) x = torch::relu(layer->forward(x));
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};

/// A loop whose activations (1 MiB per layer, kept for the backward pass) dwarf its weights
/// (64 KiB per layer), with little compute, joined with `how` (model, batch and iterations
/// filled in here).
std::vector<double> train_deep_as(runtime& rt, tandem::api::job_options how) {
  how.model = "deep-test";
  how.batch_size = 2048;
  const int iterations = static_cast<int>(how.iterations.value_or(4));
  how.iterations = iterations;
  auto j = rt.join("deep", how);
  std::shared_ptr<Deep> net;
  std::unique_ptr<torch::optim::SGD> optimizer;
  {
    auto persistent = j.persistent();
    torch::manual_seed(5);
    net = std::make_shared<Deep>();
    optimizer =
        std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.01));
  }
  auto generator = at::detail::createCPUGenerator(7);
  const auto x = torch::randn({2048, 128}, generator);
  std::vector<double> losses;
  for (int i = 0; i < iterations; ++i) {
    auto step = j.iteration();
    optimizer->zero_grad();
    auto loss = net->forward(x).pow(2).mean();
    loss.backward();
    optimizer->step();
    losses.push_back(loss.item<double>());
    step.report_loss(losses.back());
  }
  return losses;
}

std::vector<double> train_deep(runtime& rt, bool swap_passively) {
  return train_deep_as(rt, {.swap_passively = swap_passively});
}

}  // namespace passive

// job_options::swap_passively: a user's loop trains under a budget below its peak, its model
// unchanged, and its losses are bitwise those of a run with room to spare; without it the same
// budget fails the job out of memory.
TEST(RuntimeApi, AUserLoopSwappingPassivelyTrainsUnderABudgetBelowItsPeak) {
  std::vector<double> roomy;
  std::size_t peak = 0;
  // "auto" would copy at a PCIe-like fraction of this machine's speed: seconds of swapping.
  const auto at = [](const std::string& budget) {
    auto o = options("exclusive", budget);
    o.copy_bandwidth = "memcpy";
    return o;
  };
  {
    runtime rt(at("256MiB"));
    roomy = passive::train_deep(rt, false);
    peak = named(rt.results(), "deep").peak_reserved_bytes;
  }
  const auto budget = std::to_string((peak / tandem::MiB) * 2 / 3) + "MiB";
  SCOPED_TRACE("peak " + tandem::format_bytes(peak) + ", budget " + budget);
  {
    runtime rt(at(budget));
    EXPECT_ANY_THROW(passive::train_deep(rt, false));
    const auto& failed = named(rt.results(), "deep");
    EXPECT_EQ(failed.status, job_status::failed);
    EXPECT_TRUE(failed.out_of_memory) << failed.error;
  }
  runtime rt(at(budget));
  EXPECT_EQ(passive::train_deep(rt, true), roomy);
  const auto run = rt.results();
  const auto& deep = named(run, "deep");
  ASSERT_EQ(deep.status, job_status::completed) << deep.error;
  EXPECT_LE(run.peak_reserved_bytes, run.budget_bytes);
  std::size_t moved = 0;
  for (const auto& record : deep.iteration_log) {
    moved += record.traffic.swapped_out_bytes;
    if (record.traffic.swapped_out_bytes > 0) {
      EXPECT_EQ(record.plan, "passive swapping");
    }
  }
  EXPECT_GT(moved, 0u);
}

// job_options::planner: a user's loop, its model unchanged, is recorded at iteration 1, planned,
// and runs under the plan from iteration 4 on, within a budget below its peak; the plan's swaps
// and recomputations leave the losses bitwise those of a run with room to spare.
TEST(RuntimeApi, AUserLoopUnderAFootprintPlanTrainsBelowItsPeakWithTheSameLosses) {
  const auto at = [](const std::string& budget) {
    auto o = options("exclusive", budget);
    o.copy_bandwidth = "memcpy";
    return o;
  };
  constexpr int iterations = 6;
  std::vector<double> roomy;
  std::size_t peak = 0;
  {
    runtime rt(at("256MiB"));
    roomy = passive::train_deep_as(rt, {.iterations = iterations});
    peak = named(rt.results(), "deep").peak_reserved_bytes;
  }
  const auto budget = std::to_string((peak / tandem::MiB) * 3 / 4) + "MiB";
  for (const std::string planner : {"capuchin", "tensile", "vdnn-all"}) {
    SCOPED_TRACE(planner + " at a budget of " + budget + ", peak " + tandem::format_bytes(peak));
    runtime rt(at(budget));
    EXPECT_EQ(passive::train_deep_as(
                  rt, {.iterations = iterations, .planner = planner, .plan_budget = "50%"}),
              roomy);
    const auto run = rt.results();
    const auto& deep = named(run, "deep");
    ASSERT_EQ(deep.status, job_status::completed) << deep.error;
    EXPECT_LE(run.peak_reserved_bytes, run.budget_bytes);
    ASSERT_TRUE(deep.footprint.has_value());
    const auto& f = *deep.footprint;
    EXPECT_EQ(f.planner, planner);
    EXPECT_EQ(f.planned_iterations, static_cast<std::size_t>(iterations - 4));
    EXPECT_GT(f.swapped_tensors + f.recomputed_tensors, 0u);
    EXPECT_GT(f.swapped_out_bytes + f.recomputations, 0u);
    EXPECT_EQ(f.diverged_iterations, 0u);
    EXPECT_LT(f.predicted_peak_bytes, f.predicted_vanilla_peak_bytes);
    EXPECT_LT(f.planned_peak_bytes, f.vanilla_peak_bytes);
    for (std::size_t i = 4; i < deep.iteration_log.size(); ++i) {
      EXPECT_EQ(deep.iteration_log[i].plan, planner) << "iteration " << i;
    }
  }
}

// Wrong planner options are refused at join, naming the option.
TEST(RuntimeApi, WrongPlannerOptionsAreRefusedAtJoin) {
  runtime rt(options("exclusive"));
  const auto refused = [&](const tandem::api::job_options& how, const std::string& words) {
    try {
      static_cast<void>(rt.join("x", how));
      ADD_FAILURE() << "joined";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({.planner = "capuchn"}, "unknown planner 'capuchn'; did you mean 'capuchin'");
  refused({.planner = "capuchin", .plan_budget = "lots"}, "plan_budget");
  refused({.plan_budget = "lots"}, "plan_budget");  // asks for the default planner
  refused({.iterations = 4, .planner = "capuchin"}, "at least 5 iterations");
  // Bad options are bad input, as a runtime's are: config_error, whatever the option.
  EXPECT_THROW(static_cast<void>(rt.join("x", {.plan_budget = "lots"})), tandem::config_error);
  EXPECT_THROW(static_cast<void>(rt.join("x", {.iterations = 3, .plan_budget = "50%"})),
               tandem::config_error);  // the default planner's job needs 4 iterations too
  EXPECT_THROW(static_cast<void>(rt.join("x", {.iterations = 3, .planner = "capuchin"})),
               tandem::config_error);
  EXPECT_THROW(static_cast<void>(rt.join("x", {.iterations = 0})), tandem::config_error);
  // Refusals leave nothing behind: the name is free.
  auto j = rt.join("x", {.planner = "checkpoint"});
}

// policy static splits the budget into expected_jobs partitions: given, two jobs train side by
// side, each within its half (it once failed at the runtime's making, expected_jobs unheard).
TEST(RuntimeApi, StaticSplitsTheBudgetAmongTheExpectedJobs) {
  runtime rt(options("static"));
  std::vector<double> a;
  std::vector<double> b;
  std::thread first([&] { a = train(rt, "a", 6); });
  std::thread second([&] { b = train(rt, "b", 6); });
  first.join();
  second.join();
  const auto run = rt.results();
  EXPECT_EQ(run.policy, "static");
  ASSERT_EQ(run.jobs.size(), 2u);
  for (const auto& j : run.jobs) {
    EXPECT_EQ(j.status, job_status::completed) << j.error;
    EXPECT_EQ(j.iterations, 6);
    EXPECT_LE(j.peak_reserved_bytes, run.budget_bytes / 2);
  }
  EXPECT_EQ(a, b);
}

// A budget above what the machine can reserve is refused when the runtime is made, in the
// options' terms (it once escaped as a device_error from the pool, naming no option).
TEST(RuntimeApi, ABudgetAboveWhatTheMachineCanReserveIsRefused) {
  const auto refusal = [](const tandem::api::runtime_options& o) -> std::string {
    try {
      runtime rt(o);
    } catch (const tandem::config_error& e) {
      return e.what();
    }
    return "";
  };
  const auto budget = refusal(options("scrooge", "1000TiB"));
  EXPECT_NE(budget.find("budget \"1000TiB\""), std::string::npos) << budget;
  EXPECT_NE(budget.find("this machine can reserve"), std::string::npos) << budget;
  EXPECT_NE(budget.find("use a smaller budget"), std::string::npos) << budget;
  auto o = options("scrooge");
  o.capacity = "1000TiB";
  const auto capacity = refusal(o);
  EXPECT_NE(capacity.find("use a smaller capacity"), std::string::npos) << capacity;
  runtime next(options("scrooge"));  // nothing was left behind
}

// After stop(), close() waits for the jobs of other threads to leave at their next iteration
// (Ctrl-C in a program whose main thread closes the runtime); without a stop, or for the
// calling thread's own job, it refuses with the reason. A join after the stop is stopped too.
TEST(RuntimeApi, CloseAfterStopWaitsForTheOtherThreadsJobsToLeave) {
  runtime rt(options("scrooge"));
  std::atomic<int> iterations{0};
  std::atomic<bool> stopped{false};
  std::thread loop([&] {
    auto j = rt.join("looping");
    try {
      for (;;) {
        auto step = j.iteration();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ++iterations;
      }
    } catch (const tandem::api::stopped&) {
      stopped = true;
    }
    // Still joined a while after the stop: close must wait for the job to go.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  while (iterations == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  try {
    rt.close();
    ADD_FAILURE() << "closed while a job runs";
  } catch (const tandem::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("or stop() the runtime"), std::string::npos) << e.what();
  }
  rt.stop();
  EXPECT_THROW(static_cast<void>(rt.join("late")), tandem::api::stopped);
  rt.close();
  EXPECT_TRUE(stopped);
  const auto run = rt.results();
  ASSERT_EQ(run.jobs.size(), 1u);
  EXPECT_EQ(run.jobs[0].status, job_status::stopped);
  loop.join();
  runtime next(options("scrooge"));  // the device is gone: another runtime can be made
}

TEST(RuntimeApi, CloseRefusesWhileTheCallingThreadsOwnJobHasNotLeft) {
  runtime rt(options("scrooge"));
  auto j = rt.join("mine");
  rt.stop();
  try {
    rt.close();
    ADD_FAILURE() << "closed under its own job";
  } catch (const tandem::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("of this thread has not left"), std::string::npos)
        << e.what();
  }
  j.leave();
  rt.close();
}
