// Gradient checkpointing (Chen et al. 2016, "Training deep nets with sublinear memory cost"):
// keep some forward activations (the checkpoints) and recompute the others in the backward pass
// from the nearest one before them. Without a budget: sqrt(n) segments of sqrt(n) activations,
// each segment's last one kept. With a budget: Chen's greedy segmenting under a threshold b (a
// new segment, and a checkpoint, wherever the running size passes b), b chosen by pricing every
// candidate on a geometric grid with the cost model and taking the fastest plan that fits (the
// predicted peak is not monotone in b, so a scan rather than a bisection).

#include <algorithm>
#include <cmath>
#include <vector>

#include "planner_support.hpp"
#include "tandem/footprint/cost_model.hpp"

namespace tandem::footprint::detail {

namespace {

struct activation {
  std::size_t tensor = 0;
  access_pair stretch;
};

/// The forward activations saved for the backward pass, in the order they are made.
std::vector<activation> forward_activations(const access_sequence& s) {
  std::vector<activation> out;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    if (const auto stretch = saved_for_backward(s, t)) out.push_back({t, *stretch});
  }
  std::stable_sort(out.begin(), out.end(), [&](const activation& a, const activation& b) {
    return *s.tensors[a.tensor].created_by < *s.tensors[b.tensor].created_by;
  });
  return out;
}

/// Recomputes every activation not marked kept (one whose rerun could not read its inputs
/// stays kept).
plan recompute_all_but(const access_sequence& s, const std::vector<activation>& activations,
                       const std::vector<bool>& kept, plan p) {
  for (std::size_t i = 0; i < activations.size(); ++i) {
    if (!kept[i]) try_add(p, recompute(activations[i].tensor, activations[i].stretch), s);
  }
  return p;
}

std::vector<bool> sqrt_segments(std::size_t n) {
  const auto length = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(n)))));
  std::vector<bool> kept(n);
  for (std::size_t i = 0; i < n; ++i) kept[i] = (i + 1) % length == 0 || i + 1 == n;
  return kept;
}

std::vector<bool> greedy_segments(const access_sequence& s,
                                  const std::vector<activation>& activations, double threshold) {
  std::vector<bool> kept(activations.size());
  double running = 0;
  for (std::size_t i = 0; i < activations.size(); ++i) {
    running += static_cast<double>(s.tensors[activations[i].tensor].bytes);
    if (running > threshold) {
      kept[i] = true;
      running = 0;
    }
  }
  return kept;
}

class checkpoint_planner final : public planner {
 public:
  [[nodiscard]] std::string_view name() const override { return "checkpoint"; }
  [[nodiscard]] std::string_view summary() const override {
    return "Chen et al.: keep segment boundaries, recompute the activations between them "
           "(sqrt(n) segments, or greedy segments sized for the budget)";
  }

  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    const auto activations = forward_activations(sequence);
    const auto empty = start_plan(sequence, name(), request);
    if (activations.empty()) return empty;
    if (request.budget_bytes == 0)
      return recompute_all_but(sequence, activations, sqrt_segments(activations.size()), empty);

    double smallest = 0;
    double total = 0;
    for (const auto& a : activations) {
      const auto bytes = static_cast<double>(sequence.tensors[a.tensor].bytes);
      smallest = smallest == 0 ? bytes : std::min(smallest, bytes);
      total += bytes;
    }
    smallest = std::max(smallest, 1.0);
    constexpr int grid = 32;
    std::vector<plan> candidates{
        recompute_all_but(sequence, activations, sqrt_segments(activations.size()), empty)};
    for (int i = 0; i <= grid; ++i) {
      const double threshold =
          smallest / 2 * std::pow(2 * total / smallest, static_cast<double>(i) / grid);
      candidates.push_back(recompute_all_but(
          sequence, activations, greedy_segments(sequence, activations, threshold), empty));
    }
    return cheapest_fitting(sequence, request, candidates);
  }

 private:
  /// The fastest candidate whose predicted peak fits the budget; none fitting: the smallest
  /// peak (the fastest among equals).
  static plan cheapest_fitting(const access_sequence& s, const planning_request& request,
                               std::vector<plan>& candidates) {
    std::size_t best = 0;
    prediction best_prediction;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const auto predicted = predict(s, candidates[i], request.costs);
      const bool fits = predicted.peak_bytes <= request.budget_bytes;
      const bool best_fits = best_prediction.peak_bytes <= request.budget_bytes;
      bool better = i == 0;
      if (!better && fits != best_fits) better = fits;
      if (!better && fits == best_fits) {
        better = fits ? predicted.iteration_s < best_prediction.iteration_s
                      : predicted.peak_bytes < best_prediction.peak_bytes ||
                            (predicted.peak_bytes == best_prediction.peak_bytes &&
                             predicted.iteration_s < best_prediction.iteration_s);
      }
      if (better) {
        best = i;
        best_prediction = predicted;
      }
    }
    return std::move(candidates[best]);
  }
};

}  // namespace

std::unique_ptr<planner> make_checkpoint_planner() {
  return std::make_unique<checkpoint_planner>();
}

}  // namespace tandem::footprint::detail
