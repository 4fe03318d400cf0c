#include "planner_support.hpp"

#include <string>

#include "tandem/common/error.hpp"

namespace tandem::footprint::detail {

std::optional<access_pair> saved_for_backward(const access_sequence& s, std::size_t t) {
  const auto& x = s.tensors[t];
  if (x.role != tensor_role::activation || !x.created_by ||
      s.operations[*x.created_by].where != phase::forward)
    return std::nullopt;
  for (std::size_t read = 0; read < x.read_by.size(); ++read) {
    if (s.operations[x.read_by[read]].where != phase::forward) return access_pair{read, read + 1};
  }
  return std::nullopt;
}

decision prefetched_swap(const access_sequence& s, std::size_t t, access_pair stretch) {
  // A persistent tensor released at the iteration's start: its copy out waits for operation 0.
  const auto released = s.access_op(t, stretch.released_after).value_or(0);
  const auto needed = *s.access_op(t, stretch.needed_at);
  return {
      t,    action::swap, stretch.released_after, stretch.needed_at, {released, 0}, {needed - 1, 0},
      false};
}

decision recompute(std::size_t t, access_pair stretch) {
  return {t, action::recompute, stretch.released_after, stretch.needed_at, {}, {}, false};
}

bool try_add(plan& p, const decision& d, const access_sequence& s) {
  p.decisions.push_back(d);
  try {
    validate(p, s);
    return true;
  } catch (const config_error&) {
    p.decisions.pop_back();
    return false;
  }
}

plan start_plan(const access_sequence& s, std::string_view planner,
                const planning_request& request) {
  plan p;
  p.planner = std::string(planner);
  p.model = s.model;
  p.batch_size = s.batch_size;
  p.budget_bytes = request.budget_bytes;
  return p;
}

}  // namespace tandem::footprint::detail
