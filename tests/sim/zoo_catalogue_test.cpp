// The zoo and the simulator's catalogue describe the same models (src/models and
// src/sim/catalog_*.cpp): held together by the whole sequence of tensors kept for the backward
// pass, not only by parameter counts. For every model both describe, at one small configuration,
// the access sequence `tandem profile` records of the real libtorch job and the one the catalogue
// generates must have the same activations in the same order, size for size.
//
// What is compared (docs/sim-models.md, "The zoo against the catalogue"): the tensors of role
// activation (made in the forward pass, read in the backward), in order of creation (by
// creating operation, then as made), each size rounded up to the pool's 512-byte granule as the
// recorder sees it. Tensors of one granule or less are left out: the labels (libtorch makes them
// before the images), the loss and its bookkeeping scalars, per-row statistics at these small
// sizes. For the lstm, the tensors its recurrent layers make are left out too: the catalogue
// describes cuDNN's LSTM (per step the gates and cell state in its reserve, and h), libtorch's
// CPU cell keeps the gates, c, tanh(c) and h as tensors of their own.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tandem/common/units.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/session.hpp"
#include "tandem/sim/sequence_generator.hpp"

namespace tandem {
namespace {

namespace fp = footprint;

/// The pool's rounding of every allocation (memory::pool_options::granularity).
constexpr std::size_t granule = 512;

struct zoo_case {
  std::string model;
  std::int64_t batch = 0;
  std::map<std::string, std::int64_t> options;
  /// Operations (recorded) and layers (generated) whose tensors are left out: the lstm's
  /// recurrence.
  std::string recurrence_op;
  std::string recurrence_layer;
};

/// Small enough for seconds: every model of the zoo the catalogue also has.
std::vector<zoo_case> cases() {
  return {
      {"resnet20", 4, {{"image_side", 32}}, "", ""},
      {"resnet56", 2, {{"image_side", 16}}, "", ""},
      {"resnet110", 2, {{"image_side", 8}}, "", ""},
      {"resnet", 2, {{"image_side", 16}, {"depth", 20}, {"width_multiplier", 2}}, "", ""},
      {"resnet50", 4, {{"image_side", 64}}, "", ""},
      {"vgg16", 2, {{"image_side", 32}}, "", ""},
      {"mobilenetv2", 2, {{"image_side", 32}}, "", ""},
      {"mlp", 32, {{"image_side", 16}}, "", ""},
      {"lstm", 4, {{"sequence_length", 16}}, "aten::lstm", "lstm"},
      {"bert_mini", 4, {{"sequence_length", 16}}, "", ""},
  };
}

struct activation {
  std::size_t bytes = 0;  ///< rounded to the granule
  std::string name;       ///< the tensor, and its creating operation
};

/// The activations above one granule in order of creation, without those made by an operation
/// called `skipped_op` or whose name starts with `skipped_prefix` (when not empty).
std::vector<activation> activations(const fp::access_sequence& s, const std::string& skipped_op,
                                    const std::string& skipped_prefix) {
  std::vector<std::pair<std::size_t, std::size_t>> order;  // (creating op, tensor)
  for (std::size_t i = 0; i < s.tensors.size(); ++i) {
    const auto& t = s.tensors[i];
    if (t.role != fp::tensor_role::activation || align_up(t.bytes, granule) <= granule) continue;
    const auto& op = s.operations[*t.created_by].name;
    if (!skipped_op.empty() && op == skipped_op) continue;
    if (!skipped_prefix.empty() && t.name.starts_with(skipped_prefix)) continue;
    order.emplace_back(*t.created_by, i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<activation> out;
  for (const auto& [op, i] : order) {
    out.push_back({align_up(s.tensors[i].bytes, granule),
                   s.tensors[i].name + " (" + s.operations[op].name + ")"});
  }
  return out;
}

/// Both lists side by side from the first difference, for the failure message.
std::string side_by_side(const std::vector<activation>& recorded,
                         const std::vector<activation>& generated) {
  std::size_t first = 0;
  while (first < recorded.size() && first < generated.size() &&
         recorded[first].bytes == generated[first].bytes)
    ++first;
  std::ostringstream text;
  text << "first difference at activation " << first << " (recorded " << recorded.size()
       << ", generated " << generated.size() << "):\n";
  for (std::size_t i = first > 2 ? first - 2 : 0;
       i < std::min(first + 8, std::max(recorded.size(), generated.size())); ++i) {
    text << "  " << i << ": ";
    text << (i < recorded.size() ? std::to_string(recorded[i].bytes) + " " + recorded[i].name
                                 : std::string("-"));
    text << "  |  ";
    text << (i < generated.size() ? std::to_string(generated[i].bytes) + " " + generated[i].name
                                  : std::string("-"));
    text << '\n';
  }
  return text.str();
}

runtime::workload one_job(const zoo_case& c) {
  std::ostringstream text;
  text << "[device]\ncapacity = \"4GiB\"\nregion_size = \"2MiB\"\n[policy]\nname = "
          "\"exclusive\"\n[[job]]\nname = \"j\"\nmodel = \""
       << c.model << "\"\nbatch_size = " << c.batch << "\niterations = 2\n[job.model_options]\n";
  for (const auto& [key, value] : c.options) text << key << " = " << value << '\n';
  return runtime::parse_workload(text.str(), "zoo.toml", runtime::training_vocabulary());
}

sim::model_request request_for(const zoo_case& c) {
  sim::model_request r;
  r.model = c.model;
  r.batch_size = c.batch;
  for (const auto& [key, value] : c.options) r.options[key] = static_cast<double>(value);
  return r;
}

TEST(ZooCatalogue, EveryModelBothDescribeKeepsTheSameActivationsInTheSameOrder) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.model);
    const auto profiles = runtime::profile_workload(one_job(c), 2);
    const auto& job = profiles.jobs.front();
    ASSERT_TRUE(job.sequence.has_value()) << job.error;
    const auto generated = sim::generate_access_sequence(request_for(c), sim::find_gpu("v100"));
    const auto recorded_list = activations(*job.sequence, c.recurrence_op, "");
    const auto generated_list = activations(generated, "", c.recurrence_layer);
    std::vector<std::size_t> recorded_sizes;
    std::vector<std::size_t> generated_sizes;
    for (const auto& a : recorded_list) recorded_sizes.push_back(a.bytes);
    for (const auto& a : generated_list) generated_sizes.push_back(a.bytes);
    EXPECT_EQ(recorded_sizes, generated_sizes) << side_by_side(recorded_list, generated_list);
    // Not vacuous: every feature map of the network is in the comparison.
    EXPECT_GE(recorded_sizes.size(), c.recurrence_op.empty() ? 4u : 3u);
  }
}

}  // namespace
}  // namespace tandem
