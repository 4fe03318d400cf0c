// How long TENSILE takes to plan the jobs of a device again (§4.5: it must, whenever a job
// arrives or leaves or the times drift, so planning must be cheap): online_replanner::replan
// for one to three jobs of a catalogue model on a simulated RTX 2080 Ti. Target: <= 10 ms for
// three jobs of about 300 tensors each. Run: build/bench/footprint/tandem_tensile_replan_bench
// (bench/footprint/tensile_sim.sh runs it).

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "tandem/footprint/online_replanner.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/sequence_generator.hpp"

namespace fp = tandem::footprint;

namespace {

void replan(benchmark::State& state, const std::string& model, std::int64_t batch) {
  const auto gpu = tandem::sim::find_gpu("2080ti");
  const auto sequence = tandem::sim::generate_access_sequence({model, batch, {}, "sgd"}, gpu);
  fp::online_replanner online(std::shared_ptr<const fp::planner>(fp::make_planner("tensile")),
                              {.ewma_beta = 0.8,
                               .drift_threshold = 0.1,
                               .budget_bytes = 0,
                               .costs = {.copy_bandwidth = gpu.pcie_bandwidth}});
  const auto jobs = state.range(0);
  for (std::int64_t j = 0; j < jobs; ++j) online.add_job(static_cast<std::uint64_t>(j), sequence);
  std::size_t decisions = 0;
  for (auto _ : state) {
    const auto plans = online.replan();
    decisions = 0;
    for (const auto& [key, p] : plans) decisions += p.decisions.size();
    benchmark::DoNotOptimize(decisions);
  }
  state.counters["tensors_per_job"] = static_cast<double>(sequence.tensors.size());
  state.counters["decisions"] = static_cast<double>(decisions);
}

void BM_TensileReplanVgg16(benchmark::State& state) {
  replan(state, "vgg16", 2);
}
BENCHMARK(BM_TensileReplanVgg16)->DenseRange(1, 3)->Unit(benchmark::kMillisecond);

void BM_TensileReplanResnet50(benchmark::State& state) {
  replan(state, "resnet50", 2);
}
BENCHMARK(BM_TensileReplanResnet50)->DenseRange(1, 3)->Unit(benchmark::kMillisecond);

}  // namespace
