// The exact planner's integer program (src/footprint/integer_program.hpp): CBC never takes the
// process down (Note [CBC in a child process]).

#include "../../src/footprint/integer_program.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stop_token>
#include <thread>
#include <vector>

#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/sequence_generator.hpp"

namespace tandem::footprint::detail {
namespace {

// Clp crunches an LP to its unfixed part and, built with assertions, aborts on one of two rows
// and two columns. Here the relaxation is fractional (a = 1, b = 2/3), so branch and bound
// resolves the 2x2 program itself, off crunch.
TEST(IntegerProgram, BranchesOnATwoByTwoProgramWithoutAborting) {
  integer_program ip;
  const int a = ip.binary(-2);
  const int b = ip.binary(1);
  row singleton;  // a row crunch moves into b's bounds
  singleton.add(b, 2);
  ip.at_most(singleton, 2);
  row a_needs_b;  // 2a <= 3b
  a_needs_b.add(a, 2);
  a_needs_b.add(b, -3);
  ip.at_most(a_needs_b, 0);

  ASSERT_TRUE(ip.solve(5, 1e-4));
  EXPECT_TRUE(ip.proven_optimal());
  EXPECT_NEAR(ip.objective(), -1, 1e-9);
  EXPECT_NEAR(ip.value(a), 1, 1e-9);
  EXPECT_NEAR(ip.value(b), 1, 1e-9);
}

// SqueezeNet's program at batch 4096 and 60% of its peak (tandem_planner_gap's case) makes one of
// CBC's heuristics presolve a sub-program down to two rows and crunch it: CBC 2.10.8 with Clp
// 1.17.6 aborts there, about two seconds in. The planner still gets a plan, from the solve
// tried again without heuristics.
TEST(IntegerProgram, APlanSurvivesCbcAbortingInAHeuristicsSubProgram) {
  const sim::model_request request{"squeezenet", 4096, {{"image_side", 32}, {"classes", 10}}};
  const auto& gpu = sim::find_gpu("2080ti");
  const auto sequence = sim::generate_access_sequence(request, gpu);
  const cost_options costs{.copy_bandwidth = gpu.pcie_bandwidth};
  const auto vanilla = predict(sequence, plan{}, costs);
  const auto budget = static_cast<std::size_t>(static_cast<double>(vanilla.peak_bytes) * 0.6);

  // Wall-clock seconds: 5 found no plan in about half the runs of a sanitizer build.
  const auto p = make_planner("optimal:time_limit=15")->make_plan(sequence, {budget, costs});
  EXPECT_NO_THROW(validate(p, sequence));
  ASSERT_TRUE(p.search && p.search->objective_s);
  EXPECT_LT(predict(sequence, p, costs).peak_bytes, vanilla.peak_bytes);
}

// A market split instance (Cornuejols and Dawande): four equalities over 30 binaries with
// coefficients below 100, each summing to half its row. Branch and bound is known to take very
// long on them; CBC here ran into a 20 s limit on this one. A stop ends its process at once.
TEST(IntegerProgram, AStopEndsTheSolveAtOnceInsteadOfAtItsTimeLimit) {
  integer_program ip;
  constexpr int rows = 4;
  constexpr int columns = 30;
  std::vector<int> x;
  for (int j = 0; j < columns; ++j) x.push_back(ip.binary(0));
  unsigned seed = 12345;
  for (int r = 0; r < rows; ++r) {
    row up;
    row down;
    double total = 0;
    for (const int column : x) {
      seed = seed * 1103515245u + 12345u;
      const auto a = static_cast<double>((seed >> 16) % 100);
      up.add(column, a);
      down.add(column, -a);
      total += a;
    }
    ip.at_most(up, std::floor(total / 2));
    ip.at_most(down, -std::floor(total / 2));
  }
  std::stop_source stop;
  std::jthread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(ip.solve(60, 0.0, stop.get_token()));
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - started;
  EXPECT_LT(spent.count(), 5.0);
}

}  // namespace
}  // namespace tandem::footprint::detail
