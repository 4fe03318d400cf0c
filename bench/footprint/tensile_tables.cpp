// TENSILE's Tables 1 and 2 simulated (VGG-16 x1, x2, x3 started together on an RTX 2080 Ti at
// batch 2, as the paper runs them): MSR, EOR and CBR of vdnn-all, capuchin and tensile, all
// priced by the one cost model with every job's copies on one shared channel
// (footprint::predict_together); and what re-planning does when a job arrives mid-run. Run by
// bench/footprint/tensile_sim.sh.
//
// The measures, system-wide: MSR = 1 - planned / vanilla peak of the jobs' curves added up; EOR
// = the slowest job's planned iteration / the vanilla iteration - 1; CBR = MSR / EOR. As TENSILE
// does for Capuchin (§5.1), capuchin is given tensile's saving as its budget (each job an equal
// share); vdnn-all ignores budgets; tensile plans for no budget (the lowest peak at which no
// operation waits).
//
//   tandem_tensile_tables [MODEL [BATCH [STEP [OPTIONS]]]]   (defaults: vgg16 2 per-parameter -)
// STEP: where the optimizer step runs (per-parameter, in-backward, fused; footprint/
// step_order.hpp); OPTIONS: the catalogue's model options, e.g. image_side=224,classes=1000.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/joint_planner.hpp"
#include "tandem/footprint/online_replanner.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/footprint/step_order.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/sequence_generator.hpp"

namespace fp = tandem::footprint;

namespace {

struct outcome {
  std::size_t peak = 0;
  double slowest_s = 0;
};

outcome price(const std::vector<fp::access_sequence>& jobs, const std::vector<fp::plan>& plans,
              const fp::cost_options& costs) {
  std::vector<fp::planned_job> priced;
  for (std::size_t j = 0; j < jobs.size(); ++j) priced.push_back({&jobs[j], &plans[j]});
  const auto predicted = fp::predict_together(priced, costs);
  outcome o;
  o.peak = fp::system_peak_of(predicted).bytes;
  for (const auto& p : predicted) o.slowest_s = std::max(o.slowest_s, p.iteration_s);
  return o;
}

std::vector<fp::plan> plan_all(const std::string& planner,
                               const std::vector<fp::access_sequence>& jobs, std::size_t budget,
                               const fp::cost_options& costs) {
  std::vector<fp::joint_job> joint;
  for (const auto& s : jobs) joint.push_back({&s, 1.0});
  return fp::plan_jobs(*fp::make_planner(planner), joint, {.budget_bytes = budget, .costs = costs});
}

void print_row(const char* planner, std::size_t n, const outcome& vanilla, const outcome& o,
               std::size_t decisions) {
  const auto r = fp::ratios_of(vanilla.peak, o.peak, vanilla.slowest_s, o.slowest_s);
  std::printf("| VGG-16 x%zu | %-9s | %7.1f | %7.1f | %.3f | %.3f | %5.2f | %4zu |\n", n, planner,
              static_cast<double>(vanilla.peak) / (1 << 20),
              static_cast<double>(o.peak) / (1 << 20), r.msr, r.eor, r.cbr, decisions);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string model = argc > 1 ? argv[1] : "vgg16";
  const std::int64_t batch = argc > 2 ? std::stoll(argv[2]) : 2;
  const auto gpu = tandem::sim::find_gpu("2080ti");
  const fp::cost_options costs{.copy_bandwidth = gpu.pcie_bandwidth};
  // Catalogue options as name=value pairs, comma-separated ("image_side=224,classes=1000,
  // hidden=4096": the ImageNet VGG-16); "-" or none: the model's defaults.
  std::map<std::string, double> options;
  if (argc > 4 && std::string(argv[4]) != "-") {
    const std::string text = argv[4];
    for (std::size_t at = 0; at <= text.size();) {
      const auto comma = std::min(text.find(',', at), text.size());
      const auto pair = text.substr(at, comma - at);
      const auto equals = pair.find('=');
      char* end = nullptr;
      const double value =
          equals == std::string::npos ? 0 : std::strtod(pair.c_str() + equals + 1, &end);
      if (equals == std::string::npos || equals == 0 || end == pair.c_str() + equals + 1 ||
          *end != '\0') {
        std::fprintf(stderr,
                     "tandem_tensile_tables: option '%s' is not name=value (e.g. "
                     "image_side=224,classes=1000)\n",
                     pair.c_str());
        return 2;
      }
      options[pair.substr(0, equals)] = value;
      at = comma + 1;
    }
  }
  fp::access_sequence fused;
  try {
    fused = tandem::sim::generate_access_sequence({model, batch, options, "sgd"}, gpu);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem_tensile_tables: %s\n", e.what());
    return 2;
  }
  // The optimizer's step: "per-parameter" (the default; libtorch's C++ optimizers, after the
  // backward pass), "in-backward" (each update right after its gradient is complete, as a
  // dataflow framework such as TENSILE's may run it) or "fused" (the catalogue's one step).
  const std::string step = argc > 3 ? argv[3] : "per-parameter";
  if (step != "per-parameter" && step != "in-backward" && step != "fused") {
    std::fprintf(stderr,
                 "tandem_tensile_tables: step '%s' is none of per-parameter, in-backward, fused\n",
                 step.c_str());
    return 2;
  }
  const auto sequence = step == "fused" ? fused
                        : step == "per-parameter"
                            ? fp::per_parameter_step(fused)
                            : fp::step_in_backward(fp::per_parameter_step(fused));
  std::printf(
      "%s at batch %lld on %s, optimizer step %s: %zu operations, %zu tensors, iteration %.2f ms, "
      "copies at "
      "%.1f GB/s\n\n",
      model.c_str(), static_cast<long long>(batch), gpu.name.c_str(), step.c_str(),
      sequence.operations.size(), sequence.tensors.size(), sequence.iteration_s() * 1e3,
      costs.copy_bandwidth / 1e9);
  std::printf(
      "| jobs | planner | vanilla peak MiB | planned peak MiB | MSR | EOR | CBR | decisions |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (std::size_t n = 1; n <= 3; ++n) {
    const std::vector<fp::access_sequence> jobs(n, sequence);
    const auto vanilla = price(jobs, std::vector<fp::plan>(n), costs);
    const auto tensile = plan_all("tensile", jobs, 0, costs);
    const auto tensile_o = price(jobs, tensile, costs);
    for (const char* planner : {"vdnn-all", "capuchin"}) {
      const auto plans =
          plan_all(planner, jobs, std::string(planner) == "capuchin" ? tensile_o.peak : 0, costs);
      std::size_t decisions = 0;
      for (const auto& p : plans) decisions += p.decisions.size();
      print_row(planner, n, vanilla, price(jobs, plans, costs), decisions);
    }
    std::size_t decisions = 0;
    for (const auto& p : tensile) decisions += p.decisions.size();
    print_row("tensile", n, vanilla, tensile_o, decisions);
  }

  // A third job arrives while two run under their joint plan: until the next iteration boundary
  // it runs its own plan, made alone (TENSILE's initial plan from the estimated sequence,
  // unaware of the others' copies); then online_replanner plans all three together.
  std::printf("\nA third job arrives (two running jointly planned by tensile):\n\n");
  std::printf(
      "| plans | system peak MiB | MSR | EOR | stalls ms |\n| --- | ---: | ---: | ---: | ---: |\n");
  const std::vector<fp::access_sequence> three(3, sequence);
  const auto vanilla = price(three, std::vector<fp::plan>(3), costs);
  fp::online_replanner online(
      std::shared_ptr<const fp::planner>(fp::make_planner("tensile")),
      {.ewma_beta = 0.8, .drift_threshold = 0.1, .budget_bytes = 0, .costs = costs});
  online.add_job(0, sequence);
  online.add_job(1, sequence);
  auto plans = online.replan_if_needed();
  const auto alone =
      fp::make_planner("tensile")->make_plan(sequence, {.budget_bytes = 0, .costs = costs});
  const std::vector<fp::plan> before{plans.at(0), plans.at(1), alone};
  online.add_job(2, sequence);
  plans = online.replan_if_needed();
  const std::vector<fp::plan> after{plans.at(0), plans.at(1), plans.at(2)};
  for (const auto& [label, chosen] :
       {std::pair{"before re-planning", before}, std::pair{"after re-planning", after}}) {
    std::vector<fp::planned_job> priced;
    for (std::size_t j = 0; j < 3; ++j) priced.push_back({&three[j], &chosen[j]});
    const auto predicted = fp::predict_together(priced, costs);
    double slowest = 0;
    double stalls = 0;
    for (const auto& p : predicted) {
      slowest = std::max(slowest, p.iteration_s);
      stalls += p.stall_s;
    }
    const auto peak = fp::system_peak_of(predicted).bytes;
    const auto r = fp::ratios_of(vanilla.peak, peak, vanilla.slowest_s, slowest);
    std::printf("| %s | %.1f | %.3f | %.3f | %.2f |\n", label,
                static_cast<double>(peak) / (1 << 20), r.msr, r.eor, stalls * 1e3);
  }
  return 0;
}
