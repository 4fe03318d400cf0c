#include "planner_support.hpp"

namespace tandem::footprint::detail {

namespace {

/// Keeps every tensor: the baseline every plan is measured against.
class none_planner final : public planner {
 public:
  [[nodiscard]] std::string_view name() const override { return "none"; }
  [[nodiscard]] std::string_view summary() const override {
    return "keep every tensor in device memory (the vanilla footprint)";
  }
  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    return start_plan(sequence, name(), request);
  }
};

}  // namespace

std::unique_ptr<planner> make_none_planner() {
  return std::make_unique<none_planner>();
}

}  // namespace tandem::footprint::detail
