// Two trials of a network defined here (not from tandem's zoo), trained by an ordinary libtorch
// loop on two threads, side by side under one memory budget. The lines that tandem adds to each
// loop are marked "tandem:". Usage: tandem_api_example [POLICY] [BUDGET] [ITERATIONS] [PLANNER]
// PLANNER (e.g. checkpoint, tensile): each trial trains under a footprint plan of that planner
// at half its recorded peak, from its fourth iteration on.
#include <torch/torch.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tandem/api/runtime.hpp"

namespace {

/// A small convolutional classifier for 3x32x32 images.
struct SmallConvNet : torch::nn::Module {
  SmallConvNet()
      : conv1(register_module("conv1",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        conv2(register_module("conv2",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)))),
        head(register_module("head", torch::nn::Linear(32 * 8 * 8, 10))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    return head->forward(x.flatten(1));
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear head;
};

void trial(tandem::api::runtime& rt, const std::string& name, double learning_rate, int iterations,
           const std::string& planner) {
  auto job = rt.join(name, {.model = "small-convnet",  // tandem:
                            .batch_size = 32,
                            .planner = planner,
                            .plan_budget = planner.empty() ? "" : "50%"});
  std::shared_ptr<SmallConvNet> net;
  std::unique_ptr<torch::optim::SGD> optimizer;
  {
    auto persistent = job.persistent();  // tandem:
    // torch::manual_seed sets one generator for every thread: one trial builds at a time, so
    // that each starts from the same weights in every run.
    static std::mutex building;
    std::lock_guard built(building);
    torch::manual_seed(7);
    net = std::make_shared<SmallConvNet>();
    optimizer = std::make_unique<torch::optim::SGD>(
        net->parameters(), torch::optim::SGDOptions(learning_rate).momentum(0.9));
  }
  // A fixed batch the network learns to fit: the loss must fall.
  auto generator = at::detail::createCPUGenerator(1234);
  const auto images = torch::randn({32, 3, 32, 32}, generator);
  const auto labels = torch::randint(0, 10, {32}, generator);
  for (int i = 0; i < iterations; ++i) {
    auto step = job.iteration();  // tandem:
    optimizer->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(images), labels);
    loss.backward();
    optimizer->step();
    step.report_loss(loss.item<double>());  // tandem:
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string policy = argc > 1 ? argv[1] : "scrooge";
  const std::string budget = argc > 2 ? argv[2] : "256MiB";
  const int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
  const std::string planner = argc > 4 ? argv[4] : "";
  try {
    // Small models want regions smaller than the pool's default 64 MiB (Zico's, sized for GPUs).
    tandem::api::runtime rt(
        {.budget = budget, .region_size = "2MiB", .policy = policy, .expected_jobs = 2});
    std::vector<std::thread> threads;
    std::atomic<bool> refused{false};  // a join refused the command line's planner
    for (const auto& [name, rate] :
         {std::pair{"trial-lr0.01", 0.01}, std::pair{"trial-lr0.05", 0.05}}) {
      threads.emplace_back([&, name = std::string(name), rate = rate] {
        try {
          trial(rt, name, rate, iterations, planner);
        } catch (const tandem::config_error& e) {
          refused = true;
          std::cerr << name << ": " << e.what() << std::endl;
        } catch (const std::exception& e) {
          std::cerr << name << ": " << e.what() << std::endl;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    if (refused) return 2;
    const auto results = rt.results();
    tandem::runtime::print_table(results, std::cout);
    std::cout << std::endl;
    return results.failed_jobs() == 0 ? 0 : 1;
  } catch (const tandem::config_error& e) {
    std::cerr << "tandem_api_example: " << e.what() << '\n';
    return 2;
  }
}
