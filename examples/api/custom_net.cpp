// Two trials of a network defined here (not from tandem's zoo), trained by an ordinary libtorch
// loop on two threads, side by side under one memory budget. The lines that tandem adds to each
// loop are marked "tandem:". Usage: see `usage` below (tandem_api_example --help). Ctrl-C (or
// SIGTERM) stops both trials at their next iteration, prints what was measured and exits with
// 130 (143); a second one quits at once. Bad arguments exit 2.
#include <torch/torch.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "tandem/api/runtime.hpp"
#include "tandem/common/signal_stop.hpp"

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
  // The job first: it outlives the model and optimizer declared after it, whose tensors it owns.
  auto job = rt.join(name, {.model = "small-convnet",  // tandem:
                            .batch_size = 32,
                            .iterations = iterations,  // a planned job needs 4: checked here
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
  const auto images = torch::randn({32, 3, 32, 32}, generator).to(job.device());
  const auto labels = torch::randint(0, 10, {32}, generator).to(job.device());
  for (int i = 0; i < iterations; ++i) {
    auto step = job.iteration();  // tandem: (throws tandem::api::stopped after rt.stop())
    optimizer->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(images), labels);
    loss.backward();
    optimizer->step();
    step.report_loss(loss.item<double>());  // tandem:
  }
}

constexpr const char* usage =
    "usage: tandem_api_example [POLICY] [BUDGET] [ITERATIONS] [PLANNER] [DEVICE]\n"
    "  POLICY      a tandem policy (default scrooge; tandem policies lists them)\n"
    "  BUDGET      what the two trials may hold together (default 256MiB; MB means MiB)\n"
    "  ITERATIONS  each trial's, a whole number from 1 (default 20; 4 at least with PLANNER)\n"
    "  PLANNER     a footprint planner (checkpoint, tensile, capuchin, ...) each trial trains\n"
    "              under at half its recorded peak from its fourth iteration on; none: no plan\n"
    "  DEVICE      cpu (default), or cuda / cuda:N in a build against a CUDA libtorch\n"
    "Ctrl-C stops both trials at their next iteration, prints what was measured, exits 130.\n";

struct arguments {
  std::string policy = "scrooge";
  std::string budget = "256MiB";
  int iterations = 20;
  std::string planner;  ///< empty: none
  std::string device = "cpu";
};

/// A whole number of at least 1, or nothing (atoi would take "-4" or "abc" as a count).
std::optional<int> positive_count(const std::string& text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 1) return std::nullopt;
  return value;
}

/// The command line, or the exit status when it is not one to run: 0 for --help, 2 for bad
/// arguments (each with the usage).
std::variant<arguments, int> parse(int argc, char** argv) {
  const std::vector<std::string> given(argv + 1, argv + argc);
  for (const auto& word : given) {
    if (word == "--help" || word == "-h") {
      std::cout << usage;
      return 0;
    }
  }
  const auto refuse = [](const std::string& why) {
    std::cerr << "tandem_api_example: " << why << '\n' << usage;
    return 2;
  };
  if (given.size() > 5) {
    return refuse("too many arguments: at most 5, got " + std::to_string(given.size()));
  }
  arguments parsed;
  if (!given.empty()) parsed.policy = given[0];
  if (given.size() > 1) parsed.budget = given[1];
  if (given.size() > 2) {
    const auto count = positive_count(given[2]);
    if (!count) {
      return refuse("ITERATIONS must be a whole number of at least 1, not '" + given[2] + "'");
    }
    parsed.iterations = *count;
  }
  if (given.size() > 3 && given[3] != "none") parsed.planner = given[3];
  if (given.size() > 4) parsed.device = given[4];
  return parsed;
}

/// Both trials on their threads, joined. True when a join refused the command line's options.
bool run_trials(tandem::api::runtime& rt, const arguments& args) {
  std::vector<std::thread> threads;
  std::atomic<bool> refused{false};
  for (const auto& [name, rate] :
       {std::pair{"trial-lr0.01", 0.01}, std::pair{"trial-lr0.05", 0.05}}) {
    threads.emplace_back([&, name = std::string(name), rate = rate] {
      try {
        trial(rt, name, rate, args.iterations, args.planner);
      } catch (const tandem::api::stopped&) {
        // Ctrl-C: the job left at an iteration boundary with what it measured.
      } catch (const tandem::config_error& e) {
        refused = true;
        std::cerr << name << ": " << e.what() << std::endl;
      } catch (const std::exception& e) {
        std::cerr << name << ": " << e.what() << std::endl;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return refused;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = parse(argc, argv);
  if (const auto* status = std::get_if<int>(&parsed)) return *status;
  const auto& args = std::get<arguments>(parsed);
  // Ctrl-C and SIGTERM: the runtime stops every trial at its next iteration (as `tandem run`).
  tandem::signal_stop signals("stopping both trials at their next iteration");
  try {
    // Small models want regions smaller than the pool's default 64 MiB (Zico's, sized for GPUs).
    tandem::api::runtime rt({.budget = args.budget,
                             .region_size = "2MiB",
                             .policy = args.policy,
                             .device = args.device,
                             .expected_jobs = 2});
    const std::stop_callback stop_trials(signals.token(), [&rt] { rt.stop(); });
    std::cerr << "tandem_api_example: two trials of " << args.iterations << " iterations under "
              << args.policy << " in " << args.budget << "; Ctrl-C stops them" << std::endl;
    if (run_trials(rt, args)) return 2;
    const auto results = rt.results();
    tandem::runtime::print_table(results, std::cout);
    std::cout << std::endl;
    if (signals.signal() != 0) return signals.exit_status();
    return results.failed_jobs() == 0 ? 0 : 1;
  } catch (const tandem::error& e) {  // options the runtime refused: a budget, policy, device
    std::cerr << "tandem_api_example: " << e.what() << '\n';
    return 2;
  }
}
