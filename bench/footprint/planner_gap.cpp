// Each planner against the exact one on catalogue models: for every MODEL:BATCH given, the
// access sequence the simulator generates on a GPU, every planner's plan at a budget (a share
// of the vanilla peak), its predicted iteration time and peak (the one cost model), its search
// time, and its gap to `optimal`'s predicted time. One line per model and planner, tab
// separated, for bench/footprint/home_table.sh.
//
//   tandem_planner_gap --gpu 2080ti --budget 0.6 --repeat 3
//       --planners "capuchin;checkpoint;home:iterations=20;tandem;optimal:time_limit=60"
//       vgg16:1024 resnet50:512
//
// (one line; planner specs are separated by ';' since a spec's options use ',').
//
// Each model's options are its CIFAR sizes (image_side 32, classes 10) but inception_v3's (299
// px, as bench/footprint's workload). Search times are the median of --repeat runs.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/sequence_generator.hpp"

namespace {

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, by);) out.push_back(item);
  return out;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

constexpr const char* usage =
    "usage: tandem_planner_gap [--gpu NAME] [--budget SHARE] [--repeat N] "
    "[--planners \"SPEC;SPEC\"] MODEL:BATCH...\n";

int gap_main(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  try {
    return gap_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tandem_planner_gap: " << e.what() << "\n" << usage;
    return 2;
  }
}

namespace {

int gap_main(int argc, char** argv) {
  using namespace tandem;
  std::string gpu = "2080ti";
  double share = 0.6;
  int repeat = 1;
  std::vector<std::string> planners{"capuchin", "checkpoint", "home", "tandem", "optimal"};
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto next = [&] {
      if (i + 1 >= argc) {
        std::cerr << arg << " needs a value\n";
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      return 0;
    }
    if (arg == "--gpu") {
      gpu = next();
    } else if (arg == "--budget") {
      share = std::stod(next());
    } else if (arg == "--repeat") {
      repeat = std::max(1, std::stoi(next()));
    } else if (arg == "--planners") {
      planners = split(next(), ';');
    } else {
      models.push_back(arg);
    }
  }
  const auto& spec = sim::find_gpu(gpu);
  std::cout << "model\tbatch\tcandidates\tplanner\tseconds\tpredicted_s\tpeak_bytes\tbudget_bytes"
               "\tfits\tgap_to_optimal\tip_objective_s\tip_bound_s\tproven\n";
  for (const auto& item : models) {
    const auto parts = split(item, ':');
    if (parts.size() != 2) throw std::invalid_argument("'" + item + "' is not MODEL:BATCH");
    sim::model_request request;
    request.model = parts.at(0);
    request.batch_size = std::stoll(parts.at(1));
    request.options = {{"image_side", request.model == "inception_v3" ? 299 : 32}, {"classes", 10}};
    const auto sequence = sim::generate_access_sequence(request, spec);
    const footprint::cost_options costs{.copy_bandwidth = spec.pcie_bandwidth};
    const auto vanilla = footprint::predict(sequence, footprint::plan{}, costs);
    const auto budget = static_cast<std::size_t>(static_cast<double>(vanilla.peak_bytes) * share);
    std::size_t candidates = 0;
    for (const auto& x : sequence.tensors) {
      if (x.role == footprint::tensor_role::activation && x.read_by.size() >= 2) ++candidates;
    }
    struct row {
      std::string planner;
      double seconds = 0;
      footprint::prediction predicted;
      footprint::plan plan;
    };
    std::vector<row> rows;
    double optimal_s = 0;
    for (const auto& name : planners) {
      row r;
      r.planner = name;
      std::vector<double> times;
      for (int k = 0; k < repeat; ++k) {
        const auto planner = footprint::make_planner(name);
        const auto started = std::chrono::steady_clock::now();
        r.plan = planner->make_plan(sequence, {.budget_bytes = budget, .costs = costs});
        const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - started;
        times.push_back(spent.count());
        if (footprint::planner_name_of(name) == "optimal") break;  // minutes: once
      }
      r.seconds = median(times);
      r.predicted = footprint::predict(sequence, r.plan, costs);
      if (footprint::planner_name_of(name) == "optimal") optimal_s = r.predicted.iteration_s;
      rows.push_back(std::move(r));
    }
    for (const auto& r : rows) {
      const bool fits = r.predicted.peak_bytes <= budget;
      std::printf("%s\t%lld\t%zu\t%s\t%.3f\t%.6f\t%zu\t%zu\t%s\t", request.model.c_str(),
                  static_cast<long long>(request.batch_size), candidates, r.planner.c_str(),
                  r.seconds, r.predicted.iteration_s, r.predicted.peak_bytes, budget,
                  fits ? "yes" : "no");
      if (optimal_s > 0)
        std::printf("%.4f", r.predicted.iteration_s / optimal_s - 1);
      else
        std::printf("-");
      const auto& search = r.plan.search;
      if (search && search->objective_s)
        std::printf("\t%.6f\t%.6f\t%s\n", *search->objective_s, search->bound_s.value_or(0),
                    search->proven_optimal ? "yes" : "no");
      else
        std::printf("\t-\t-\t-\n");
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
