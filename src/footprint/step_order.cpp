#include "tandem/footprint/step_order.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/common/error.hpp"

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

namespace {

/// Per parameter tensor: the optimizer-phase operation that reads it, when exactly one does and
/// reads no other parameter (a per-parameter update).
std::unordered_map<std::size_t, std::size_t> update_of(const access_sequence& s) {
  std::vector<std::size_t> parameters_read(s.operations.size(), 0);
  for (const auto& t : s.tensors) {
    if (t.role != tensor_role::parameter) continue;
    for (const auto op : t.read_by) ++parameters_read[op];
  }
  std::unordered_map<std::size_t, std::size_t> updates;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    const auto& x = s.tensors[t];
    if (x.role != tensor_role::parameter) continue;
    std::optional<std::size_t> update;
    std::size_t count = 0;
    for (const auto op : x.read_by) {
      if (s.operations[op].where != phase::optimizer || parameters_read[op] != 1) continue;
      update = op;
      ++count;
    }
    if (count == 1) updates[t] = *update;
  }
  return updates;
}

}  // namespace

access_sequence step_in_backward(const access_sequence& s) {
  const auto& ops = s.operations;
  for (std::size_t op = 1; op < ops.size(); ++op) {
    TANDEM_EXPECTS(ops[op].start_s >= ops[op - 1].start_s + ops[op - 1].duration_s - 1e-12,
                   usage_error,
                   "step_in_backward: operation " + std::to_string(op) + " (" + ops[op].name +
                       ") starts before the one before it ends; it reorders only sequences "
                       "whose operations do not overlap");
  }
  std::unordered_map<std::string, std::size_t> by_name;
  for (std::size_t t = 0; t < s.tensors.size(); ++t) by_name.emplace(s.tensors[t].name, t);

  access_sequence out = s;
  // Per operation: the updates that run right after it.
  std::vector<std::vector<std::size_t>> after(ops.size());
  std::vector<bool> moved(ops.size(), false);
  for (const auto& [parameter, update] : update_of(s)) {
    const auto found = by_name.find(s.tensors[parameter].name + ".grad");
    if (found == by_name.end()) continue;
    auto& gradient = out.tensors[found->second];
    std::optional<std::size_t> first_read;
    std::optional<std::size_t> last_read;
    for (const auto op : gradient.read_by) {
      if (ops[op].where != phase::backward) continue;
      if (!first_read || op < *first_read) first_read = op;
      if (!last_read || op > *last_read) last_read = op;
    }
    if (!last_read || *last_read > update) continue;
    after[*last_read].push_back(update);
    moved[update] = true;
    // Made by an optimizer operation before its first backward reader (zero_grad): the first
    // reader makes it instead, writing where it would have accumulated.
    if (gradient.created_by && ops[*gradient.created_by].where == phase::optimizer &&
        *gradient.created_by < *first_read) {
      std::erase(gradient.read_by, *first_read);
      gradient.created_by = *first_read;
    }
  }
  for (auto& updates : after) std::sort(updates.begin(), updates.end());

  // The new order, each operation keeping its duration and the gap before it.
  std::vector<std::size_t> order;
  order.reserve(ops.size());
  for (std::size_t op = 0; op < ops.size(); ++op) {
    if (moved[op]) continue;
    order.push_back(op);
    order.insert(order.end(), after[op].begin(), after[op].end());
  }
  std::vector<std::size_t> new_index(ops.size());
  out.operations.clear();
  double clock = ops.empty() ? 0 : ops.front().start_s;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto op = order[k];
    const double gap =
        op == 0 ? 0
                : std::max(0.0, ops[op].start_s - (ops[op - 1].start_s + ops[op - 1].duration_s));
    new_index[op] = k;
    auto placed = ops[op];
    placed.start_s = clock + gap;
    clock = placed.start_s + placed.duration_s;
    out.operations.push_back(std::move(placed));
  }
  for (auto& x : out.tensors) {
    if (x.created_by) x.created_by = new_index[*x.created_by];
    for (auto& op : x.read_by) op = new_index[op];
    std::sort(x.read_by.begin(), x.read_by.end());
    if (x.freed_after) x.freed_after = new_index[*x.freed_after];
  }
  validate(out);
  return out;
}

}  // namespace tandem::footprint
