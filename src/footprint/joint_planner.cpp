#include "tandem/footprint/joint_planner.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tandem/common/error.hpp"

namespace tandem::footprint {

const joint_planner* joint_planning_of(const planner& p) {
  return dynamic_cast<const joint_planner*>(&p);
}

std::vector<plan> plan_jobs(const planner& p, std::span<const joint_job> jobs,
                            const joint_request& request) {
  if (const auto* joint = joint_planning_of(p)) return joint->make_joint_plan(jobs, request);
  std::vector<plan> plans;
  const auto share = jobs.empty() ? 0 : request.budget_bytes / jobs.size();
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    TANDEM_EXPECTS(jobs[j].sequence != nullptr, usage_error,
                   "plan_jobs: job " + std::to_string(j) + " has no access sequence");
    plans.push_back(p.make_plan(
        *jobs[j].sequence,
        {.budget_bytes = request.budget_bytes == 0 ? 0 : std::max<std::size_t>(share, 1),
         .costs = request.costs}));
  }
  return plans;
}

system_peak system_peak_of(std::span<const prediction> predictions) {
  struct change {
    double at_s = 0;
    std::size_t job = 0;
    std::size_t bytes = 0;
  };
  std::vector<change> changes;
  for (std::size_t j = 0; j < predictions.size(); ++j) {
    for (const auto& point : predictions[j].curve) changes.push_back({point.at_s, j, point.bytes});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const change& a, const change& b) { return a.at_s < b.at_s; });
  std::vector<std::size_t> held(predictions.size(), 0);
  std::int64_t total = 0;
  system_peak peak;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const auto& c = changes[i];
    total += static_cast<std::int64_t>(c.bytes) - static_cast<std::int64_t>(held[c.job]);
    held[c.job] = c.bytes;
    // What is held at the end of an instant: every change at it applied.
    if (i + 1 < changes.size() && changes[i + 1].at_s == c.at_s) continue;
    if (static_cast<std::size_t>(total) > peak.bytes)
      peak = {static_cast<std::size_t>(total), c.at_s};
  }
  return peak;
}

}  // namespace tandem::footprint

namespace tandem::footprint {

access_sequence per_parameter_step(const access_sequence& s) {
  const auto inputs = [&] {
    std::vector<std::vector<std::size_t>> by_op(s.operations.size());
    for (std::size_t t = 0; t < s.tensors.size(); ++t) {
      for (const auto op : s.tensors[t].read_by) by_op[op].push_back(t);
    }
    return by_op;
  }();
  // Per old operation: the new operations it becomes, and which of them each tensor it reads
  // goes to.
  access_sequence out = s;
  out.operations.clear();
  std::vector<std::size_t> first_new(s.operations.size());
  std::vector<std::map<std::size_t, std::size_t>> part_of(s.operations.size());
  for (std::size_t op = 0; op < s.operations.size(); ++op) {
    const auto& o = s.operations[op];
    first_new[op] = out.operations.size();
    std::vector<std::size_t> parameters;
    if (o.where == phase::optimizer) {
      for (const auto t : inputs[op]) {
        if (s.tensors[t].role == tensor_role::parameter) parameters.push_back(t);
      }
    }
    if (parameters.size() < 2) {
      out.operations.push_back(o);
      continue;
    }
    std::vector<std::vector<std::size_t>> groups(parameters.size());
    std::vector<std::size_t> bytes(parameters.size(), 0);
    std::vector<std::size_t> loose;
    for (const auto t : inputs[op]) {
      const auto& name = s.tensors[t].name;
      std::optional<std::size_t> group;
      for (std::size_t g = 0; g < parameters.size() && !group; ++g) {
        const auto& p = s.tensors[parameters[g]].name;
        if (t == parameters[g] ||
            (name.size() > p.size() && name.compare(0, p.size(), p) == 0 && name[p.size()] == '.'))
          group = g;
      }
      if (!group) {
        loose.push_back(t);
        continue;
      }
      groups[*group].push_back(t);
      bytes[*group] += s.tensors[t].bytes;
    }
    std::size_t total = 0;
    for (const auto b : bytes) total += b;
    double start = o.start_s;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      auto part = o;
      part.name = o.name + "[" + s.tensors[parameters[g]].name + "]";
      part.start_s = start;
      part.duration_s =
          total == 0 ? o.duration_s / static_cast<double>(groups.size())
                     : o.duration_s * static_cast<double>(bytes[g]) / static_cast<double>(total);
      start += part.duration_s;
      for (const auto t : groups[g]) part_of[op][t] = out.operations.size();
      out.operations.push_back(std::move(part));
    }
    for (const auto t : loose) part_of[op][t] = out.operations.size() - 1;
  }
  const auto last_of = [&](std::size_t op) {
    return op + 1 < s.operations.size() ? first_new[op + 1] - 1 : out.operations.size() - 1;
  };
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    auto& x = out.tensors[t];
    if (x.created_by) x.created_by = first_new[*x.created_by];
    for (auto& op : x.read_by) {
      const auto& parts = part_of[op];
      const auto found = parts.find(t);
      op = found != parts.end() ? found->second : first_new[op];
    }
    if (x.freed_after) {
      const auto& parts = part_of[*x.freed_after];
      const auto found = parts.find(t);
      x.freed_after = found != parts.end() ? found->second : last_of(*x.freed_after);
    }
  }
  validate(out);
  return out;
}

}  // namespace tandem::footprint
