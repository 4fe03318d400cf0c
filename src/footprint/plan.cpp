#include "tandem/footprint/plan.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "stretches.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/json_field.hpp"

namespace tandem::footprint {

namespace {

bool persistent(const tensor& x) {
  return !x.created_by;
}

std::string describe_op(const access_sequence& s, std::size_t op) {
  return "operation " + std::to_string(op) + " '" + s.operations[op].name + "'";
}

std::string describe_tensor(const access_sequence& s, std::size_t t) {
  return "tensor " + std::to_string(t) + " '" + s.tensors[t].name + "'";
}

class plan_checker {
 public:
  plan_checker(const plan& p, const access_sequence& s)
      : plan_(p), sequence_(s), inputs_(detail::inputs_by_op(s)) {}

  void check() {
    for (std::size_t k = 0; k < plan_.decisions.size(); ++k) check_indices(k);
    const detail::stretch_lookup lookup(sequence_, plan_);
    for (std::size_t t = 0; t < sequence_.tensors.size(); ++t) check_no_overlap(lookup, t);
    for (std::size_t k = 0; k < plan_.decisions.size(); ++k) {
      if (plan_.decisions[k].what == action::recompute) check_rerun_inputs(lookup, k);
    }
  }

 private:
  [[noreturn]] void refuse(std::size_t k, const std::string& problem) const {
    const auto t = plan_.decisions[k].tensor;
    std::string what = "plan: decision " + std::to_string(k);
    if (t < sequence_.tensors.size()) what += " (" + describe_tensor(sequence_, t) + ")";
    TANDEM_FAIL(config_error, what + ": " + problem);
  }

  void check_trigger(std::size_t k, const trigger& when, const char* which,
                     std::size_t needed_op) const {
    if (when.op >= sequence_.operations.size())
      refuse(k, std::string(which) + " names operation " + std::to_string(when.op) +
                    ", but the sequence has " + std::to_string(sequence_.operations.size()) +
                    " operations; plan again for this sequence");
    if (!std::isfinite(when.delay_s) || when.delay_s < 0)
      refuse(k, std::string(which) + ".delay_s must be a finite number of seconds >= 0");
    if (when.op >= needed_op)
      refuse(k, std::string(which) + " is triggered by " + describe_op(sequence_, when.op) +
                    ", not before " + describe_op(sequence_, needed_op) +
                    " that needs the tensor back; trigger it by an earlier operation");
  }

  void check_indices(std::size_t k) const {
    const auto& d = plan_.decisions[k];
    if (d.tensor >= sequence_.tensors.size())
      refuse(k, "tensor " + std::to_string(d.tensor) + " does not exist (the sequence has " +
                    std::to_string(sequence_.tensors.size()) +
                    " tensors); plan again for this sequence");
    const auto& x = sequence_.tensors[d.tensor];
    const auto reads = x.read_by.size();
    if (d.wraps) {
      check_wrap(k);
      return;
    }
    if (d.needed_at == 0 || d.needed_at > reads)
      refuse(k, "needed_at is access " + std::to_string(d.needed_at) +
                    ", which does not exist: " + "the tensor is read " + std::to_string(reads) +
                    " times (accesses 1 to " + std::to_string(reads) + ")");
    if (d.released_after >= d.needed_at)
      refuse(k, "the stretch ends (needed_at " + std::to_string(d.needed_at) +
                    ") before it starts (released_after " + std::to_string(d.released_after) +
                    "); needed_at must be the access after released_after");
    if (d.needed_at != d.released_after + 1) {
      const auto skipped = *sequence_.access_op(d.tensor, d.released_after + 1);
      refuse(k, "read by " + describe_op(sequence_, skipped) + " (access " +
                    std::to_string(d.released_after + 1) +
                    ") while out; end the stretch at that access (needed_at = released_after "
                    "+ 1) and start another after it");
    }
    const auto needed_op = *sequence_.access_op(d.tensor, d.needed_at);
    if (d.what == action::swap) {
      check_trigger(k, d.swap_out, "swap_out", needed_op);
      check_trigger(k, d.swap_in, "swap_in", needed_op);
    } else if (persistent(x)) {
      refuse(k, "a " + std::string(to_string(x.role)) +
                    " has no creating operation to run again; swap it instead of recomputing");
    } else if (!sequence_.operations[*x.created_by].recomputable) {
      refuse(k, "its creating " + describe_op(sequence_, *x.created_by) +
                    " cannot run again (it changes memory it did not make, or is not an "
                    "operator); swap the tensor instead");
    }
  }

  /// Note [Stretches across iterations] (plan.hpp).
  void check_wrap(std::size_t k) const {
    const auto& d = plan_.decisions[k];
    const auto& x = sequence_.tensors[d.tensor];
    const auto reads = x.read_by.size();
    if (!persistent(x))
      refuse(k, "wraps the iteration boundary, but a " + std::string(to_string(x.role)) +
                    " is made in the iteration and does not outlive it; only a parameter or "
                    "optimizer state (no creating operation) can stay out across iterations");
    if (d.what != action::swap)
      refuse(k,
             "wraps the iteration boundary by recompute; only a swap can keep a tensor out "
             "across iterations");
    if (reads == 0)
      refuse(k,
             "wraps the iteration boundary, but the tensor is never read; nothing needs it "
             "back");
    if (d.released_after != reads || d.needed_at != 1)
      refuse(k, "wraps the iteration boundary from access " + std::to_string(d.released_after) +
                    " to access " + std::to_string(d.needed_at) +
                    " of the next iteration; a stretch across iterations runs from the last "
                    "access (released_after = " +
                    std::to_string(reads) + ") to the first read (needed_at = 1)");
    const auto needed_op = *sequence_.access_op(d.tensor, 1);
    // The copy out's trigger belongs to the releasing iteration: any operation of it.
    check_trigger(k, d.swap_out, "swap_out", sequence_.operations.size());
    check_trigger(k, d.swap_in, "swap_in", needed_op);
  }

  void check_no_overlap(const detail::stretch_lookup& lookup, std::size_t t) const {
    const auto& mine = lookup.decisions_of(t);
    for (std::size_t a = 0; a < mine.size(); ++a) {
      for (std::size_t b = a + 1; b < mine.size(); ++b) {
        const auto& first = plan_.decisions[mine[a]];
        const auto& second = plan_.decisions[mine[b]];
        // A stretch across iterations also covers the iteration's start up to access 1.
        if ((first.wraps && !second.wraps && second.released_after == 0) ||
            (second.wraps && !first.wraps && first.released_after == 0))
          refuse(mine[b], "its stretch overlaps decision " + std::to_string(mine[a]) +
                              "'s: one wraps the iteration boundary, so the tensor is out "
                              "already from the iteration's start to its first read; drop the "
                              "stretch from access 0");
        if (plan_.decisions[mine[a]].released_after == plan_.decisions[mine[b]].released_after)
          refuse(mine[b], "its stretch overlaps decision " + std::to_string(mine[a]) +
                              "'s (both release it after access " +
                              std::to_string(plan_.decisions[mine[b]].released_after) +
                              "); keep one decision per stretch");
      }
    }
  }

  /// The rerun of tensor `t`'s creating operation before operation `op` reads its inputs: each
  /// must exist then and be in device memory, back by then (a swap-in due at `op`) or rebuilt
  /// first (recomputed itself, recursively).
  void check_rerun_inputs(const detail::stretch_lookup& lookup, std::size_t k) const {
    const auto& d = plan_.decisions[k];
    check_rebuildable(lookup, k, d.tensor, *sequence_.access_op(d.tensor, d.needed_at));
  }

  void check_rebuildable(const detail::stretch_lookup& lookup, std::size_t k, std::size_t t,
                         std::size_t op) const {
    const auto creator = *sequence_.tensors[t].created_by;
    for (const auto input : inputs_[creator]) {
      // Built only for a refusal: planners validate plans by the thousand.
      const auto why = [&] {
        return "recomputing " + describe_tensor(sequence_, t) + " before " +
               describe_op(sequence_, op) + " runs " + describe_op(sequence_, creator) +
               " again, which reads " + describe_tensor(sequence_, input);
      };
      if (const auto released = sequence_.release_op(input); released && *released < op)
        refuse(k, why() + ", released after " + describe_op(sequence_, *released) +
                      "; swap the tensor instead, or recompute it from a tensor that lives longer");
      const auto out = lookup.out_before(input, op);
      if (!out) continue;
      const auto& other = plan_.decisions[*out];
      const auto back_at = detail::span_of(sequence_, other).to_op;
      if (other.what == action::recompute) {
        check_rebuildable(lookup, k, input, op);
      } else if (back_at != op) {
        refuse(k, why() + ", swapped out then by decision " + std::to_string(*out) + " (until " +
                      describe_op(sequence_, back_at) +
                      "); keep that input in memory or recompute it too");
      }
    }
  }

  const plan& plan_;
  const access_sequence& sequence_;
  std::vector<std::vector<std::size_t>> inputs_;
};

// ---- JSON ----

document_context context_for(const std::string& source) {
  return {source,
          "this is not a plan as tandem writes it: make it again with `tandem plan --json`"};
}

nlohmann::json to_json(const trigger& when) {
  return {{"op", when.op}, {"delay_s", when.delay_s}};
}

trigger read_trigger(const json_field& f) {
  return {f["op"].count<std::size_t>(), f["delay_s"].seconds()};
}

nlohmann::json to_json(const search_summary& search) {
  nlohmann::json out{{"seconds", search.seconds},
                     {"evaluations", search.evaluations},
                     {"predicted_s", search.predicted_s},
                     {"predicted_peak_bytes", search.predicted_peak_bytes},
                     {"objective_s", nullptr},
                     {"bound_s", nullptr},
                     {"proven_optimal", search.proven_optimal}};
  if (search.objective_s) out["objective_s"] = *search.objective_s;
  if (search.bound_s) out["bound_s"] = *search.bound_s;
  return out;
}

search_summary read_search(const json_field& f) {
  search_summary out;
  out.seconds = f["seconds"].seconds();
  out.evaluations = f["evaluations"].count<std::size_t>();
  out.predicted_s = f["predicted_s"].seconds();
  out.predicted_peak_bytes = f["predicted_peak_bytes"].count<std::size_t>();
  const auto optional_seconds = [&](const char* key) -> std::optional<double> {
    const auto field = f[key];
    if (field.json().is_null()) return std::nullopt;
    return field.seconds();
  };
  out.objective_s = optional_seconds("objective_s");
  out.bound_s = optional_seconds("bound_s");
  out.proven_optimal = f["proven_optimal"].flag();
  return out;
}

action read_action(const json_field& f) {
  const auto text = f.text();
  if (text == to_string(action::swap)) return action::swap;
  if (text == to_string(action::recompute)) return action::recompute;
  f.expected("\"swap\" or \"recompute\"");
}

}  // namespace

std::string_view to_string(action a) {
  switch (a) {
    case action::swap:
      return "swap";
    case action::recompute:
      return "recompute";
  }
  TANDEM_ASSERT(false, "action without a name");
  return "";
}

void validate(const plan& p, const access_sequence& sequence) {
  plan_checker(p, sequence).check();
}

void write_plan_json(const plan& p, std::ostream& out) {
  nlohmann::json decisions = nlohmann::json::array();
  for (const auto& d : p.decisions) {
    decisions.push_back({{"tensor", d.tensor},
                         {"action", to_string(d.what)},
                         {"released_after", d.released_after},
                         {"needed_at", d.needed_at},
                         {"swap_out", to_json(d.swap_out)},
                         {"swap_in", to_json(d.swap_in)},
                         {"wraps", d.wraps}});
  }
  nlohmann::json document{{"schema_version", plan_schema_version},
                          {"planner", p.planner},
                          {"model", p.model},
                          {"batch_size", p.batch_size},
                          {"budget_bytes", p.budget_bytes},
                          {"decisions", decisions}};
  if (p.search) document["search"] = to_json(*p.search);
  out << document.dump(1) << '\n';
}

plan read_plan_json(std::istream& in, const std::string& source) {
  const auto context = context_for(source);
  const auto document = parse_document(in, context);
  const json_field root(document, "", context);
  // Schema 1 is schema 2 without `wraps` (no stretch wrapped then).
  const auto version = root["schema_version"].json();
  const bool schema_1 = version.is_number_integer() && version.get<std::int64_t>() == 1;
  check_schema_version(root, schema_1 ? 1 : plan_schema_version, "a plan", context);
  plan p;
  p.planner = root["planner"].text();
  p.model = root["model"].text();
  p.batch_size = root["batch_size"].count<std::int64_t>();
  p.budget_bytes = root["budget_bytes"].count<std::size_t>();
  for (const auto& f : root["decisions"].elements()) {
    decision d;
    d.tensor = f["tensor"].count<std::size_t>();
    d.what = read_action(f["action"]);
    d.released_after = f["released_after"].count<std::size_t>();
    d.needed_at = f["needed_at"].count<std::size_t>();
    d.swap_out = read_trigger(f["swap_out"]);
    d.swap_in = read_trigger(f["swap_in"]);
    if (!schema_1) d.wraps = f["wraps"].flag();
    p.decisions.push_back(d);
  }
  // Absent from plans written before searching planners existed, and from the others' plans.
  if (document.contains("search")) p.search = read_search(root["search"]);
  return p;
}

}  // namespace tandem::footprint
