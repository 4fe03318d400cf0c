// HOME (Huang et al., IEEE TPDS): particle swarm search over per-tensor placements, as §3.3 and
// §3.5 write it. A particle is an action vector (0 retain, 1 swap, 2 recompute) over the
// activations saved for the backward pass (action_space.hpp). Algorithm 1: `particles` random
// particles; each of `iterations` iterations prices every particle with the cost model (HOME's
// Algorithm 2 is tandem's one cost model here), keeps each particle's historical best, the
// last iteration's best and the best ever, then updates every particle (Algorithm 3): for each
// tensor in turn, the particle takes that tensor's action from the last iteration's best and
// from its own historical best, prices both, and keeps the cheaper. Where the two agree there
// is one candidate, so nothing is priced (the result is what Algorithm 3 gives). The objective
// is the iteration time within the budget (action_space.hpp's score: over the budget is worse,
// by how much). Defaults are the paper's, 500 particles and 500 iterations, within a minute;
// seeded and deterministic unless `time_limit` cuts the search short.

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "action_space.hpp"
#include "planner_options.hpp"
#include "planner_support.hpp"

namespace tandem::footprint::detail {

namespace {

struct home_options {
  std::int64_t iterations = 500;
  std::int64_t particles = 500;
  std::uint64_t seed = 0;
  /// 0: none. HOME's 500 x 500 evaluations take minutes on a deep network (over 12 on
  /// ResNet-56 here): by default the search ends at a minute with its best, as optimal's does.
  double time_limit_s = 60;
};

struct particle {
  choices position;
  choices best;
  score best_score;
};

class home_planner final : public planner {
 public:
  explicit home_planner(home_options options) : options_(options) {}

  [[nodiscard]] std::string_view name() const override { return "home"; }
  [[nodiscard]] std::string_view summary() const override {
    return "HOME: particle swarm over retain/swap/recompute per activation, each tensor's action "
           "from the particle's historical best or the last iteration's best, priced by the "
           "cost model (options: iterations, particles, seed, time_limit)";
  }

  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    const auto started = std::chrono::steady_clock::now();
    const auto out_of_time = [&] {
      if (request.stop.stop_requested()) return true;
      if (options_.time_limit_s <= 0) return false;
      const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - started;
      return spent.count() >= options_.time_limit_s;
    };
    const action_space space(sequence, request);
    const auto n = space.size();
    std::mt19937_64 random(options_.seed);
    std::uniform_int_distribution<int> action(0, 2);

    // Algorithm 1, lines 1-3: random particles.
    std::vector<particle> swarm(static_cast<std::size_t>(options_.particles));
    for (auto& p : swarm) {
      p.position.resize(n);
      for (auto& a : p.position) a = static_cast<choice>(action(random));
    }
    choices best_ever(n, choice::retain);
    auto best_ever_score = space.evaluate(best_ever);  // keeping everything, as a floor
    for (std::int64_t iteration = 0; iteration < options_.iterations && !out_of_time();
         ++iteration) {
      // Lines 6-12: price every particle, keep the bests.
      std::size_t last_best = 0;
      score last_best_score;
      for (std::size_t i = 0; i < swarm.size(); ++i) {
        if (i > 0 && out_of_time()) break;  // a large swarm takes a while to price
        auto& p = swarm[i];
        const auto priced = space.evaluate(p.position);
        if (iteration == 0 || priced < p.best_score) {
          p.best = p.position;
          p.best_score = priced;
        }
        if (i == 0 || priced < last_best_score) {
          last_best = i;
          last_best_score = priced;
        }
        if (priced < best_ever_score) {
          best_ever = p.position;
          best_ever_score = priced;
        }
      }
      if (iteration + 1 == options_.iterations) break;  // the update would go unpriced
      // Line 13, Algorithm 3: the update.
      const auto guide = swarm[last_best].position;
      for (auto& p : swarm) {
        if (out_of_time()) break;
        for (std::size_t j = 0; j < n; ++j) {
          if (guide[j] == p.best[j]) {
            p.position[j] = guide[j];
            continue;
          }
          auto trial = p.position;
          trial[j] = guide[j];
          const auto o1 = space.evaluate(trial);
          trial = p.position;
          trial[j] = p.best[j];
          const auto o2 = space.evaluate(trial);
          p.position[j] = o1 < o2 ? guide[j] : p.best[j];
        }
      }
    }

    auto result = space.plan_of(best_ever, name());
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - started;
    result.search = search_summary{.seconds = spent.count(),
                                   .evaluations = space.evaluations(),
                                   .predicted_s = best_ever_score.iteration_s,
                                   .predicted_peak_bytes = 0,
                                   .objective_s = std::nullopt,
                                   .bound_s = std::nullopt,
                                   .proven_optimal = false};
    result.search->predicted_peak_bytes = predict(sequence, result, request.costs).peak_bytes;
    return result;
  }

 private:
  home_options options_;
};

}  // namespace

std::vector<std::string> home_option_help() {
  return {"iterations: search iterations (500, as HOME)",
          "particles: particles per iteration (500, as HOME)",
          "seed: of the random first particles (0)",
          "time_limit: seconds after which the search stops with its best (60; 0: none)"};
}

std::unique_ptr<planner> make_home_planner(option_reader& options) {
  home_options o;
  o.iterations = options.whole("iterations", o.iterations, 1, 100000);
  o.particles = options.whole("particles", o.particles, 1, 100000);
  o.seed = static_cast<std::uint64_t>(options.whole("seed", 0, 0, INT64_MAX));
  o.time_limit_s = options.real("time_limit", o.time_limit_s, 0, 1e6);
  return std::make_unique<home_planner>(o);
}

}  // namespace tandem::footprint::detail
