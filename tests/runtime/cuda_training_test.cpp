// Jobs training on a CUDA device (src/runtime/job_device.hpp): built only against a CUDA
// libtorch; the runs skip, with the reason, where no GPU can be used. scripts/gpu-check.sh runs
// them on a GPU machine.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tandem/api/runtime.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/cuda_backend.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/session.hpp"

namespace tandem::runtime {
namespace {

std::string cuda_workload(const std::string& policy, const std::string& extra_device = "",
                          const std::string& extra_job = "") {
  std::string text =
      "[device]\nkind = \"cuda\"\ncapacity = \"1GiB\"\nbudget = \"512MiB\"\n"
      "region_size = \"2MiB\"\n" +
      extra_device + "[policy]\nname = \"" + policy + "\"\n";
  for (const char* name : {"a", "b"}) {
    text += std::string("[[job]]\nname = \"") + name +
            "\"\nmodel = \"resnet20\"\nbatch_size = 32\niterations = 20\n" + extra_job +
            "[job.model_options]\nimage_side = 16\n";
  }
  return text;
}

workload parse(const std::string& text) {
  return parse_workload(text, "cuda.toml", training_vocabulary());
}

void skip_without_gpu() {
  std::string why;
  if (!device::cuda_backend::available(&why)) GTEST_SKIP() << why;
}

TEST(CudaTraining, FootprintPlansAreRefusedWithTheReason) {
  // Validation only: no GPU needed.
  try {
    validate_training_workload(parse(cuda_workload("scrooge", "", "planner = \"capuchin\"\n")), {});
    FAIL() << "a planner on a CUDA device was accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU backend only"), std::string::npos) << e.what();
  }
  run_options with_planner;
  with_planner.overrides.planner = "checkpoint";
  EXPECT_THROW(validate_training_workload(parse(cuda_workload("scrooge")), with_planner),
               config_error);
  // Profiles hold access sequences, recorded on the CPU backend only.
  try {
    static_cast<void>(profile_workload(parse(cuda_workload("scrooge")), 2, nullptr, {}));
    FAIL() << "a profile of a CUDA workload was recorded";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU backend only"), std::string::npos) << e.what();
  }
}

class CudaPolicies : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaPolicies, TwoJobsTrainSideBySideWithinTheBudget) {
  skip_without_gpu();
  if (::testing::Test::IsSkipped()) return;
  const auto run = run_workload(parse(cuda_workload(GetParam(), "inflight_limit = 64\n")));
  ASSERT_EQ(run.jobs.size(), 2u);
  for (const auto& job : run.jobs) {
    EXPECT_EQ(job.status, job_status::completed) << job.name << ": " << job.error;
    ASSERT_TRUE(job.first_loss && job.last_loss) << job.name;
    EXPECT_TRUE(std::isfinite(*job.last_loss)) << job.name;
    EXPECT_LT(*job.last_loss, *job.first_loss) << job.name;
    EXPECT_GT(job.peak_live_bytes, 0u) << job.name << ": its tensors went around the pool";
  }
  EXPECT_LE(run.peak_reserved_bytes, run.budget_bytes);
  EXPECT_NE(run.device.find("cuda:"), std::string::npos) << run.device;
}

INSTANTIATE_TEST_SUITE_P(Policies, CudaPolicies,
                         ::testing::Values("temporal", "spatial", "scrooge", "nodegroup"));

TEST(CudaTraining, UserLoopsTrainTheirOwnNetworksOnTheirOwnStreams) {
  skip_without_gpu();
  if (::testing::Test::IsSkipped()) return;
  api::runtime_options options;
  options.device = "cuda";
  options.budget = "256MiB";
  options.region_size = "2MiB";
  options.policy = "scrooge";
  api::runtime rt(options);
  std::vector<double> first(2), last(2);
  std::vector<std::thread> trials;
  for (int t = 0; t < 2; ++t) {
    trials.emplace_back([&, t] {
      auto job = rt.join("trial-" + std::to_string(t));
      EXPECT_TRUE(job.device().is_cuda());
      torch::manual_seed(static_cast<std::uint64_t>(t));
      torch::nn::Sequential net;
      std::unique_ptr<torch::optim::SGD> sgd;
      {
        auto persistent = job.persistent();
        net = torch::nn::Sequential(torch::nn::Linear(64, 128), torch::nn::ReLU(),
                                    torch::nn::Linear(128, 10));
        net->to(job.device());
        sgd = std::make_unique<torch::optim::SGD>(net->parameters(), 0.1);
      }
      const auto x = torch::randn({256, 64}, job.device());
      const auto y = torch::randint(10, {256}, torch::dtype(torch::kLong).device(job.device()));
      for (int i = 0; i < 30; ++i) {
        auto step = job.iteration();
        sgd->zero_grad();
        auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
        loss.backward();
        sgd->step();
        const double value = loss.item<double>();
        if (i == 0) first[static_cast<std::size_t>(t)] = value;
        last[static_cast<std::size_t>(t)] = value;
      }
    });
  }
  for (auto& trial : trials) trial.join();
  for (std::size_t t = 0; t < 2; ++t) EXPECT_LT(last[t], first[t]) << "trial " << t;
  const auto results = rt.results();
  for (const auto& job : results.jobs) {
    EXPECT_EQ(job.status, job_status::completed) << job.name << ": " << job.error;
    EXPECT_GT(job.peak_live_bytes, 0u) << job.name;
  }
}

}  // namespace
}  // namespace tandem::runtime
