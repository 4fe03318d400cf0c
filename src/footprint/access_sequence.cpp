#include "tandem/footprint/access_sequence.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "tandem/common/error.hpp"
#include "tandem/common/json_field.hpp"

namespace tandem::footprint {

namespace {

constexpr std::array phase_names{"forward", "backward", "optimizer"};
constexpr std::array role_names{"activation", "gradient", "parameter", "optimizer_state",
                                "temporary"};
constexpr std::array kind_names{"convolution", "matmul", "normalization", "pooling",
                                "elementwise", "other",  "optimizer"};

template <typename Enum, std::size_t N>
std::string_view name_of(Enum value, const std::array<const char*, N>& names) {
  const auto index = static_cast<std::size_t>(value);
  TANDEM_ASSERT(index < N, "enumerator without a name");
  return names[index];
}

bool persistent(tensor_role role) {
  return role == tensor_role::parameter || role == tensor_role::optimizer_state;
}

// ---- validation ----

std::string describe_op(const access_sequence& s, std::size_t op) {
  return "operation " + std::to_string(op) + " '" + s.operations[op].name + "'";
}

std::string describe_tensor(const access_sequence& s, std::size_t t) {
  return "tensor " + std::to_string(t) + " '" + s.tensors[t].name + "'";
}

[[noreturn]] void refuse(const std::string& what, const std::string& problem) {
  TANDEM_FAIL(config_error, "access sequence: " + what + ": " + problem);
}

void validate_operations(const access_sequence& s) {
  for (std::size_t i = 0; i < s.operations.size(); ++i) {
    const auto& op = s.operations[i];
    if (!std::isfinite(op.start_s) || op.start_s < 0)
      refuse(describe_op(s, i), "start_s must be a finite number of seconds >= 0");
    if (!std::isfinite(op.duration_s) || op.duration_s < 0)
      refuse(describe_op(s, i), "duration_s must be a finite number of seconds >= 0");
    if (i > 0 && op.start_s < s.operations[i - 1].start_s)
      refuse(describe_op(s, i), "starts at " + std::to_string(op.start_s) + " s, before " +
                                    describe_op(s, i - 1) + " (" +
                                    std::to_string(s.operations[i - 1].start_s) +
                                    " s); list operations in the order they ran");
  }
}

void validate_tensor(const access_sequence& s, std::size_t t) {
  const auto& x = s.tensors[t];
  const auto ops = s.operations.size();
  const auto what = describe_tensor(s, t);
  const auto exists = [&](std::size_t op, const char* field) {
    if (op >= ops)
      refuse(what, std::string(field) + " names operation " + std::to_string(op) +
                       ", but the sequence has " + std::to_string(ops) +
                       " operations; number operations from 0");
  };
  if (persistent(x.role)) {
    if (x.created_by)
      refuse(what, "a " + std::string(to_string(x.role)) +
                       " exists before the iteration, yet created_by names an operation; "
                       "drop created_by or give it a transient role");
    if (x.freed_after)
      refuse(what, "a " + std::string(to_string(x.role)) +
                       " lives across iterations, yet freed_after names an operation; "
                       "drop freed_after or give it a transient role");
  } else if (!x.created_by) {
    refuse(what, "a " + std::string(to_string(x.role)) +
                     " is made during the iteration, yet has no created_by; name the operation "
                     "that creates it");
  }
  if (x.created_by) exists(*x.created_by, "created_by");
  for (std::size_t i = 0; i < x.read_by.size(); ++i) {
    const auto reader = x.read_by[i];
    exists(reader, "read_by");
    if (x.created_by && reader <= *x.created_by)
      refuse(what, "read by " + describe_op(s, reader) + ", not after its creation by " +
                       describe_op(s, *x.created_by) +
                       "; an operation reads only tensors made before it");
    if (i > 0 && reader <= x.read_by[i - 1])
      refuse(what, "read_by lists " + describe_op(s, reader) + " after " +
                       describe_op(s, x.read_by[i - 1]) +
                       "; list each reader once, in execution order");
  }
  if (x.freed_after) {
    exists(*x.freed_after, "freed_after");
    const auto last_use = x.read_by.empty() ? *x.created_by : x.read_by.back();
    if (*x.freed_after < last_use)
      refuse(what, "freed after " + describe_op(s, *x.freed_after) + ", before its use by " +
                       describe_op(s, last_use) +
                       "; freed_after must not precede its creation or a read");
  }
}

// ---- JSON ----

document_context context_for(const std::string& source) {
  return {source,
          "this is not an access sequence as tandem writes it: record it again with "
          "`tandem profile` or generate it with the simulator's catalogue"};
}

template <typename Enum, std::size_t N>
Enum read_enum(const json_field& f, const std::array<const char*, N>& names) {
  const auto text = f.text();
  for (std::size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<Enum>(i);
  }
  std::string known;
  for (const char* name : names) known += (known.empty() ? "" : ", ") + std::string(name);
  f.expected("one of " + known);
}

nlohmann::json optional_json(const std::optional<std::size_t>& index) {
  return index ? nlohmann::json(*index) : nlohmann::json(nullptr);
}

}  // namespace

std::string_view to_string(phase p) {
  return name_of(p, phase_names);
}
std::string_view to_string(tensor_role r) {
  return name_of(r, role_names);
}
std::string_view to_string(op_kind k) {
  return name_of(k, kind_names);
}

double access_sequence::iteration_s() const {
  double end = 0;
  for (const auto& op : operations) end = std::max(end, op.start_s + op.duration_s);
  return end;
}

access_sequence access_sequence::with_durations(std::span<const double> durations) const {
  TANDEM_EXPECTS(durations.size() == operations.size(), usage_error,
                 "access_sequence::with_durations: " + std::to_string(durations.size()) +
                     " durations for " + std::to_string(operations.size()) + " operations");
  auto retimed = *this;
  double previous_end = 0;
  for (std::size_t op = 0; op < operations.size(); ++op) {
    TANDEM_EXPECTS(std::isfinite(durations[op]) && durations[op] >= 0, usage_error,
                   "access_sequence::with_durations: operation " + std::to_string(op) + " takes " +
                       std::to_string(durations[op]) + " s");
    const auto& recorded = operations[op];
    const double idle = op == 0 ? recorded.start_s
                                : std::max(0.0, recorded.start_s - (operations[op - 1].start_s +
                                                                    operations[op - 1].duration_s));
    auto& o = retimed.operations[op];
    o.start_s = previous_end + idle;
    o.duration_s = durations[op];
    previous_end = o.start_s + o.duration_s;
  }
  return retimed;
}

std::vector<std::size_t> access_sequence::inputs_of(std::size_t op) const {
  std::vector<std::size_t> inputs;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const auto& readers = tensors[t].read_by;
    if (std::find(readers.begin(), readers.end(), op) != readers.end()) inputs.push_back(t);
  }
  return inputs;
}

std::vector<std::size_t> access_sequence::outputs_of(std::size_t op) const {
  std::vector<std::size_t> outputs;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].created_by == op) outputs.push_back(t);
  }
  return outputs;
}

std::optional<std::size_t> access_sequence::release_op(std::size_t t) const {
  const auto& x = tensors.at(t);
  if (persistent(x.role)) return std::nullopt;
  if (x.freed_after) return x.freed_after;
  if (!x.read_by.empty()) return x.read_by.back();
  return x.created_by;
}

std::optional<std::size_t> access_sequence::access_op(std::size_t t, std::size_t access) const {
  const auto& x = tensors.at(t);
  if (access == 0) return x.created_by;
  TANDEM_EXPECTS(access <= x.read_by.size(), usage_error,
                 "tensor " + std::to_string(t) + " has no access " + std::to_string(access));
  return x.read_by[access - 1];
}

bool access_sequence::is_scratch(std::size_t t) const {
  const auto& x = tensors.at(t);
  return x.created_by && x.read_by.empty() && release_op(t) == x.created_by;
}

std::vector<std::size_t> access_sequence::scratch_bytes_by_op() const {
  std::vector<std::size_t> sum(operations.size(), 0);
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    if (is_scratch(t)) sum[*tensors[t].created_by] += tensors[t].bytes;
  }
  for (std::size_t op = 0; op < operations.size(); ++op) {
    if (const auto peak = operations[op].scratch_peak_bytes) sum[op] = std::min(sum[op], *peak);
  }
  return sum;
}

void validate(const access_sequence& sequence) {
  validate_operations(sequence);
  for (std::size_t t = 0; t < sequence.tensors.size(); ++t) validate_tensor(sequence, t);
}

void write_access_sequence_json(const access_sequence& sequence, std::ostream& out) {
  nlohmann::json operations = nlohmann::json::array();
  for (const auto& op : sequence.operations) {
    operations.push_back({{"name", op.name},
                          {"phase", to_string(op.where)},
                          {"kind", to_string(op.kind)},
                          {"start_s", op.start_s},
                          {"duration_s", op.duration_s},
                          {"random", op.random},
                          {"recomputable", op.recomputable},
                          {"scratch_peak_bytes", optional_json(op.scratch_peak_bytes)}});
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& x : sequence.tensors) {
    tensors.push_back({{"name", x.name},
                       {"bytes", x.bytes},
                       {"role", to_string(x.role)},
                       {"created_by", optional_json(x.created_by)},
                       {"read_by", x.read_by},
                       {"freed_after", optional_json(x.freed_after)},
                       {"allocation", optional_json(x.allocation)}});
  }
  const nlohmann::json document{{"schema_version", access_sequence_schema_version},
                                {"model", sequence.model},
                                {"batch_size", sequence.batch_size},
                                {"other_bytes", sequence.other_bytes},
                                {"operations", operations},
                                {"tensors", tensors}};
  out << document.dump(1) << '\n';
}

access_sequence read_access_sequence_json(std::istream& in, const std::string& source) {
  const auto context = context_for(source);
  const auto document = parse_document(in, context);
  const json_field root(document, "", context);
  // Schema 2 is schema 3 without operations' scratch_peak_bytes.
  const auto version = root["schema_version"].json();
  const bool schema_2 = version.is_number_integer() && version.get<std::int64_t>() == 2;
  check_schema_version(root, schema_2 ? 2 : access_sequence_schema_version, "an access sequence",
                       context);
  access_sequence s;
  s.model = root["model"].text();
  s.batch_size = root["batch_size"].count<std::int64_t>();
  s.other_bytes = root["other_bytes"].count<std::size_t>();
  for (const auto& f : root["operations"].elements()) {
    operation op;
    op.name = f["name"].text();
    op.where = read_enum<phase>(f["phase"], phase_names);
    op.kind = read_enum<op_kind>(f["kind"], kind_names);
    op.start_s = f["start_s"].seconds();
    op.duration_s = f["duration_s"].seconds();
    op.random = f["random"].flag();
    op.recomputable = f["recomputable"].flag();
    if (!schema_2) op.scratch_peak_bytes = f["scratch_peak_bytes"].optional_index();
    s.operations.push_back(std::move(op));
  }
  for (const auto& f : root["tensors"].elements()) {
    tensor x;
    x.name = f["name"].text();
    x.bytes = f["bytes"].count<std::size_t>();
    x.role = read_enum<tensor_role>(f["role"], role_names);
    x.created_by = f["created_by"].optional_index();
    for (const auto& reader : f["read_by"].elements())
      x.read_by.push_back(reader.count<std::size_t>());
    x.freed_after = f["freed_after"].optional_index();
    x.allocation = f["allocation"].optional_index();
    s.tensors.push_back(std::move(x));
  }
  try {
    validate(s);
  } catch (const config_error& e) {
    TANDEM_FAIL(config_error, source + ": " + e.what());
  }
  return s;
}

}  // namespace tandem::footprint
