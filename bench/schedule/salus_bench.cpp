// What one iteration boundary costs Salus's policies: the ending iteration's report (needs
// updated, lanes defragmented, waiting jobs admitted) and the asks of every waiting job that
// follow it, as the runtime's gate makes them. This is the scheduling part of a job switch
// (Salus §5.1.2: switches at sub-second granularity; the gate measures the whole switch).

#include <benchmark/benchmark.h>

#include <string>

#include "tandem/common/units.hpp"
#include "tandem/schedule/salus.hpp"

namespace {

using namespace tandem::schedule;

iteration_report report(double start_s, double end_s, memory_need need) {
  iteration_report r;
  r.start_s = start_s;
  r.end_s = end_s;
  r.held.held_at_start = need.persistent;
  r.held.duration_s = end_s - start_s;
  const auto e = static_cast<std::int64_t>(need.ephemeral);
  r.held.steps = {{0, e}, {end_s - start_s, -e}};
  return r;
}

/// `jobs` resident jobs under `discipline` with a budget that leaves room for `lanes` lanes;
/// each measured boundary ends one running iteration and lets every waiting job ask.
void boundary(benchmark::State& state, salus_discipline discipline) {
  const auto jobs = static_cast<job_id>(state.range(0));
  const auto lanes = static_cast<std::size_t>(state.range(1));
  const memory_need need{16 * tandem::MiB, 256 * tandem::MiB};
  const std::size_t budget =
      static_cast<std::size_t>(jobs) * need.persistent + lanes * need.ephemeral;
  salus_policy policy(budget, discipline);
  for (job_id j = 0; j < jobs; ++j) {
    auto info = job_info::make(j, "job" + std::to_string(j), 0, 1'000'000'000);
    info.need = need;
    policy.on_arrival(info, 0);
  }
  std::vector<bool> running(static_cast<std::size_t>(jobs), false);
  std::vector<double> started(static_cast<std::size_t>(jobs), 0);
  double now = 0;
  const auto ask_everyone = [&] {
    for (job_id j = 0; j < jobs; ++j) {
      if (running[j]) continue;
      if (policy.may_start(j, now) == decision::start()) {
        policy.on_iteration_start(j, now);
        running[j] = true;
        started[j] = now;
      }
    }
  };
  ask_everyone();
  job_id next_end = 0;
  std::int64_t starts = 0;
  for (auto _ : state) {
    while (!running[next_end]) next_end = (next_end + 1) % jobs;
    now += 0.01;
    policy.on_iteration_end(next_end, report(started[next_end], now, need), now);
    running[next_end] = false;
    ask_everyone();
    ++starts;
    next_end = (next_end + 1) % jobs;
  }
  state.counters["lanes"] = static_cast<double>(policy.lanes().lanes().size());
}

void BM_SalusBoundarySrtf(benchmark::State& state) {
  boundary(state, salus_discipline::srtf);
}
void BM_SalusBoundaryPack(benchmark::State& state) {
  boundary(state, salus_discipline::pack);
}
void BM_SalusBoundaryFair(benchmark::State& state) {
  boundary(state, salus_discipline::fair);
}

BENCHMARK(BM_SalusBoundarySrtf)->ArgsProduct({{4, 16, 64}, {1}});
BENCHMARK(BM_SalusBoundaryPack)->ArgsProduct({{4, 16, 64}, {2, 4}});
BENCHMARK(BM_SalusBoundaryFair)->ArgsProduct({{4, 16, 64}, {2, 4}});

}  // namespace
