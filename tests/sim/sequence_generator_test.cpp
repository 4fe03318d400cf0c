// The catalogue's tensor access sequences against its profiles: for every model the sequence
// validates, runs the profile's operations for as long, peaks where the profile peaks (counted
// here by brute force, tensor by tensor and operation by operation), holds the parameters the
// model has; and ResNet's and VGG's activations are the sizes their layers make.

#include "tandem/sim/sequence_generator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/sim/profile_generator.hpp"

namespace tandem::sim {
namespace {

namespace fp = footprint;

model_request request(const std::string& model, std::int64_t batch,
                      std::map<std::string, double> options = {}) {
  model_request r;
  r.model = model;
  r.batch_size = batch;
  r.options = std::move(options);
  return r;
}

/// Every model of the catalogue at the batch docs/sim-models.md reports it at (32 where it
/// reports none), with its default options ("resnet" needs its depth).
std::vector<model_request> default_requests() {
  const std::map<std::string, std::int64_t> batches = {
      {"gnmt", 64}, {"rhn", 64}, {"tacotron", 64}, {"nasnet", 32}};
  std::vector<model_request> all;
  for (const auto& model : generated_model_names()) {
    const auto found = batches.find(model);
    auto r = request(model, found == batches.end() ? 32 : found->second);
    if (model == "resnet") r.options["depth"] = 56;
    all.push_back(std::move(r));
  }
  return all;
}

const gpu_spec& v100() {
  return find_gpu("v100");
}

/// The last operation a tensor is held through: its last reader or the one it is freed after.
std::size_t held_to(const fp::tensor& t) {
  std::size_t last = *t.created_by;
  if (!t.read_by.empty()) last = std::max(last, t.read_by.back());
  if (t.freed_after) last = std::max(last, *t.freed_after);
  return last;
}

/// The most held during any operation: every tensor from the start of the operation that makes
/// it to the end of the last that reads it or frees it, persistent tensors and other_bytes
/// throughout. By brute force: each operation against each tensor.
std::size_t vanilla_peak(const fp::access_sequence& s) {
  std::size_t most = 0;
  for (std::size_t op = 0; op < s.operations.size(); ++op) {
    std::size_t held = s.other_bytes;
    for (const auto& t : s.tensors) {
      if (!t.created_by || (*t.created_by <= op && op <= held_to(t))) held += t.bytes;
    }
    most = std::max(most, held);
  }
  return most;
}

double relative_error(double value, double reference) {
  return std::abs(value - reference) / reference;
}

std::vector<const fp::tensor*> tensors_named(const fp::access_sequence& s,
                                             const std::string& suffix) {
  std::vector<const fp::tensor*> found;
  for (const auto& t : s.tensors) {
    if (t.name.ends_with(suffix)) found.push_back(&t);
  }
  return found;
}

const fp::tensor& tensor_named(const fp::access_sequence& s, const std::string& name) {
  for (const auto& t : s.tensors) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return s.tensors.front();
}

std::size_t op_named(const fp::access_sequence& s, const std::string& name) {
  for (std::size_t i = 0; i < s.operations.size(); ++i) {
    if (s.operations[i].name == name) return i;
  }
  ADD_FAILURE() << "no operation " << name;
  return 0;
}

// ---- Every model -----------------------------------------------------------------------------

TEST(AccessSequences, EveryModelValidates) {
  for (const auto& r : default_requests()) {
    const auto s = generate_access_sequence(r, v100());
    EXPECT_NO_THROW(fp::validate(s)) << r.model;
    EXPECT_EQ(s.model, r.model);
    EXPECT_EQ(s.batch_size, r.batch_size);
  }
}

TEST(AccessSequences, OperationsAreTheProfilesWithTheirDurations) {
  for (const auto& r : default_requests()) {
    const auto s = generate_access_sequence(r, v100());
    const auto p = generate_profile(r, v100());
    ASSERT_EQ(s.operations.size(), p.operations.size()) << r.model;
    double start = 0;
    for (std::size_t i = 0; i < s.operations.size(); ++i) {
      const auto& op = s.operations[i];
      EXPECT_EQ(op.name, p.operations[i].name) << r.model;
      EXPECT_EQ(op.duration_s, p.operations[i].solo_s) << r.model << " " << op.name;
      EXPECT_EQ(op.start_s, start) << r.model << " " << op.name;
      start += op.duration_s;
    }
    EXPECT_LE(relative_error(s.iteration_s(), p.solo_iteration_s()), 1e-9) << r.model;
  }
}

TEST(AccessSequences, VanillaPeakIsTheProfilesWithinOnePercent) {
  double worst = 0;
  std::string worst_model;
  for (const auto& r : default_requests()) {
    const auto s = generate_access_sequence(r, v100());
    const auto p = generate_profile(r, v100());
    const double error = relative_error(static_cast<double>(vanilla_peak(s)),
                                        static_cast<double>(p.peak_live_bytes));
    EXPECT_LE(error, 0.01) << r.model << " at batch " << r.batch_size;
    EXPECT_LE(vanilla_peak(s), p.peak_live_bytes) << r.model;  // the profile rounds up
    if (error > worst) {
      worst = error;
      worst_model = r.model;
    }
    std::printf("%-14s b%-3lld peak %14zu sequence %14zu relative error %.2e\n", r.model.c_str(),
                static_cast<long long>(r.batch_size), p.peak_live_bytes, vanilla_peak(s), error);
  }
  std::printf("worst: %s, %.2e\n", worst_model.c_str(), worst);
}

TEST(AccessSequences, TheProfilesPeakHoldsWithAdamAndAtBatchOne) {
  for (auto r : default_requests()) {
    r.batch_size = 1;
    r.optimizer = "adam";
    const auto s = generate_access_sequence(r, v100());
    EXPECT_NO_THROW(fp::validate(s)) << r.model;
    const auto p = generate_profile(r, v100());
    const auto peak = vanilla_peak(s);
    EXPECT_LE(relative_error(static_cast<double>(peak), static_cast<double>(p.peak_live_bytes)),
              0.01)
        << r.model;
    EXPECT_LE(peak, p.peak_live_bytes) << r.model;  // the profile rounds allocations up
  }
}

TEST(AccessSequences, ParametersAreFourBytesPerParameter) {
  for (const auto& r : default_requests()) {
    const auto s = generate_access_sequence(r, v100());
    std::size_t parameters = 0;
    std::size_t gradients = 0;
    std::size_t state = 0;
    for (const auto& t : s.tensors) {
      if (t.role == fp::tensor_role::parameter) parameters += t.bytes;
      if (t.role == fp::tensor_role::optimizer_state) state += t.bytes;
      if (t.role == fp::tensor_role::gradient && t.name.ends_with(".grad")) gradients += t.bytes;
    }
    const auto expected = static_cast<std::size_t>(4 * parameter_count(r));
    EXPECT_EQ(parameters, expected) << r.model;
    EXPECT_EQ(gradients, expected) << r.model;
    EXPECT_EQ(state, expected) << r.model;  // SGD's momentum
  }
}

TEST(AccessSequences, SurviveTheirJson) {
  for (const std::string model : {"resnet50", "bert_base", "tacotron"}) {
    const auto s = generate_access_sequence(request(model, 4), v100());
    std::stringstream json;
    fp::write_access_sequence_json(s, json);
    const auto back = fp::read_access_sequence_json(json, model);
    ASSERT_EQ(back.operations.size(), s.operations.size()) << model;
    ASSERT_EQ(back.tensors.size(), s.tensors.size()) << model;
    EXPECT_EQ(back.other_bytes, s.other_bytes) << model;
    EXPECT_EQ(vanilla_peak(back), vanilla_peak(s)) << model;
  }
}

// ---- What reads what -------------------------------------------------------------------------

TEST(AccessSequences, LayersReadTheirInputsParametersAndSavedTensors) {
  const auto s = generate_access_sequence(request("resnet20", 4), v100());
  const std::size_t zero = op_named(s, "zero_grad");
  const std::size_t step = op_named(s, "optimizer.step");
  EXPECT_EQ(zero, 0u);
  EXPECT_EQ(step, s.operations.size() - 1);
  EXPECT_EQ(s.operations[zero].where, fp::phase::optimizer);
  EXPECT_EQ(s.operations[step].where, fp::phase::optimizer);

  const std::size_t stem = op_named(s, "stem.forward");
  const std::size_t stem_bn = op_named(s, "stem_bn.forward");
  const std::size_t stem_back = op_named(s, "stem.backward");
  const std::size_t stem_bn_back = op_named(s, "stem_bn.backward");
  EXPECT_EQ(s.operations[stem].kind, fp::op_kind::convolution);
  EXPECT_EQ(s.operations[stem_bn].kind, fp::op_kind::normalization);
  EXPECT_EQ(s.operations[stem_back].where, fp::phase::backward);

  // The batch feeds the stem; the stem's output feeds its batch norm and its own backward.
  const auto& batch = tensor_named(s, "batch.output");
  EXPECT_EQ(batch.read_by, std::vector<std::size_t>{stem});
  const auto& out = tensor_named(s, "stem.output");
  EXPECT_EQ(out.role, fp::tensor_role::activation);
  EXPECT_EQ(out.created_by, stem);
  EXPECT_EQ(out.read_by, (std::vector<std::size_t>{stem_bn, stem_back}));
  EXPECT_FALSE(out.freed_after);

  // The weight: forward, backward, step; its gradient made by zero_grad, accumulated into by
  // the backward, read by the step; the momentum read by the step alone.
  const auto& weight = tensor_named(s, "stem.parameter0");
  EXPECT_EQ(weight.role, fp::tensor_role::parameter);
  EXPECT_FALSE(weight.created_by);
  EXPECT_EQ(weight.read_by, (std::vector<std::size_t>{stem, stem_back, step}));
  EXPECT_EQ(weight.bytes, 16u * 3 * 3 * 3 * 4);
  const auto& grad = tensor_named(s, "stem.parameter0.grad");
  EXPECT_EQ(grad.role, fp::tensor_role::gradient);
  EXPECT_EQ(grad.created_by, zero);
  EXPECT_EQ(grad.read_by, (std::vector<std::size_t>{stem_back, step}));
  const auto& momentum = tensor_named(s, "stem.parameter0.momentum_buffer");
  EXPECT_EQ(momentum.role, fp::tensor_role::optimizer_state);
  EXPECT_EQ(momentum.read_by, std::vector<std::size_t>{step});

  // The batch norm's input gradient goes to the stem's backward; the stem makes none (its input
  // is the batch). Its scratch lives for its operation alone.
  const auto& bn_gradient = tensor_named(s, "stem_bn.input_gradient");
  EXPECT_EQ(bn_gradient.created_by, stem_bn_back);
  EXPECT_EQ(bn_gradient.read_by, std::vector<std::size_t>{stem_back});
  EXPECT_TRUE(tensors_named(s, "stem.input_gradient").empty());
  const auto& workspace = tensor_named(s, "stem.forward_scratch");
  EXPECT_EQ(workspace.role, fp::tensor_role::temporary);
  EXPECT_EQ(workspace.created_by, stem);
  EXPECT_TRUE(workspace.read_by.empty());
  EXPECT_FALSE(workspace.freed_after);

  // An output only the next forward reads, freed later: the second batch norm's, freed once the
  // addition has read it.
  const auto& bn2 = tensor_named(s, "stage1_0.bn2.output");
  EXPECT_EQ(bn2.role, fp::tensor_role::temporary);
  EXPECT_EQ(bn2.read_by, std::vector<std::size_t>{op_named(s, "stage1_0.add.forward")});
  EXPECT_FALSE(bn2.freed_after);
  // Buffers (running statistics and step counters of 19 batch norms) are other_bytes.
  EXPECT_EQ(s.other_bytes, 2u * 4 * (16 * 7 + 32 * 6 + 64 * 6) + 19 * 8);
}

TEST(AccessSequences, SharedWeightsAreReadWhereverTheyAreUsed) {
  // Every time step of an LSTM reads the recurrent weights declared on its input projection.
  const auto lstm = generate_access_sequence(request("lstm", 4), v100());
  const auto& recurrent = tensor_named(lstm, "lstm0.input.parameter1");
  for (const std::string step : {"lstm0.t0", "lstm0.t17"}) {
    for (const std::string direction : {".forward", ".backward"}) {
      const auto op = op_named(lstm, step + direction);
      EXPECT_TRUE(std::ranges::binary_search(recurrent.read_by, op)) << step << direction;
    }
  }
  // RHN's softmax reads the embedding's table (tied), and accumulates into its gradient.
  const auto rhn = generate_access_sequence(request("rhn", 4), v100());
  const auto softmax_back = op_named(rhn, "softmax.backward");
  EXPECT_TRUE(std::ranges::binary_search(tensor_named(rhn, "embedding.parameter0").read_by,
                                         op_named(rhn, "softmax.forward")));
  EXPECT_TRUE(std::ranges::binary_search(tensor_named(rhn, "embedding.parameter0.grad").read_by,
                                         softmax_back));
  // Its own parameter is its bias alone (10,000 classes).
  EXPECT_EQ(tensor_named(rhn, "softmax.parameter0").bytes, 10000u * 4);
  EXPECT_TRUE(tensors_named(rhn, "softmax.parameter1").empty());
}

TEST(AccessSequences, DropoutDrawsRandomNumbersInItsForwardOnly) {
  const auto s = generate_access_sequence(request("bert_base", 2), v100());
  int random = 0;
  for (const auto& op : s.operations) {
    if (op.random) {
      ++random;
      EXPECT_EQ(op.where, fp::phase::forward) << op.name;
      EXPECT_TRUE(op.name.find("dropout") != std::string::npos) << op.name;
    }
  }
  EXPECT_GT(random, 12);  // at least two per encoder layer
  EXPECT_EQ(tensor_named(s, "embeddings.dropout.saved").bytes, 2u * 128 * 768);  // the mask
}

TEST(AccessSequences, AdamKeepsTwoMomentsAndAScratchForItsStep) {
  auto r = request("mlp", 16);
  r.optimizer = "adam";
  const auto s = generate_access_sequence(r, v100());
  const auto params = static_cast<std::size_t>(4 * parameter_count(r));
  std::size_t state = 0;
  for (const auto& t : s.tensors) {
    if (t.role == fp::tensor_role::optimizer_state) state += t.bytes;
  }
  EXPECT_EQ(state, 2 * params);
  EXPECT_FALSE(tensors_named(s, ".exp_avg_sq").empty());
  const auto& sqrt_v = tensor_named(s, "optimizer.step.scratch");
  EXPECT_EQ(sqrt_v.role, fp::tensor_role::temporary);
  EXPECT_EQ(sqrt_v.bytes, params);
  EXPECT_EQ(sqrt_v.created_by, s.operations.size() - 1);
}

// ---- The layers' sizes -----------------------------------------------------------------------

/// The kept outputs of the forward pass, in order.
std::vector<std::size_t> kept_output_bytes(const fp::access_sequence& s) {
  std::vector<std::pair<std::size_t, std::size_t>> made;  // (creating operation, bytes)
  for (const auto& t : s.tensors) {
    if (t.role == fp::tensor_role::activation && t.name.ends_with(".output")) {
      made.emplace_back(*t.created_by, t.bytes);
    }
  }
  std::stable_sort(made.begin(), made.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::size_t> bytes;
  for (const auto& [op, size] : made) bytes.push_back(size);
  return bytes;
}

TEST(AccessSequences, VggActivationsAreItsLayersMaps) {
  constexpr std::size_t b = 8;
  const auto s = generate_access_sequence(
      request("vgg16", b, {{"image_side", 224}, {"classes", 1000}, {"hidden", 4096}}), v100());
  auto map = [](std::size_t channels, std::size_t side) { return b * channels * side * side * 4; };
  std::vector<std::size_t> expected = {map(3, 224)};  // the batch
  // Each convolution's output and its batch norm's (ReLU'd, not in place), then the pool's.
  const std::vector<std::pair<std::size_t, int>> stages = {
      {64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  std::size_t side = 224;
  for (const auto& [channels, convolutions] : stages) {
    for (int i = 0; i < 2 * convolutions; ++i) expected.push_back(map(channels, side));
    side /= 2;
    expected.push_back(map(channels, side));
  }
  expected.push_back(b * 4096 * 4);  // fc1's ReLU
  expected.push_back(b * 4096 * 4);  // fc2's ReLU
  expected.push_back(4);             // the loss
  EXPECT_EQ(kept_output_bytes(s), expected);
  // The pools keep their int64 argmax indices.
  const auto pools = tensors_named(s, "pool5.saved");
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0]->bytes, b * 512 * 7 * 7 * 8);
}

TEST(AccessSequences, ResNet50ConvolutionsAreItsLayersMaps) {
  constexpr std::size_t b = 4;
  const auto s = generate_access_sequence(
      request("resnet50", b, {{"image_side", 224}, {"classes", 1000}}), v100());
  auto map = [](std::size_t channels, std::size_t side) { return b * channels * side * side * 4; };
  std::vector<std::size_t> expected = {map(64, 112)};  // the 7x7 stem, stride 2
  const std::size_t blocks[] = {3, 4, 6, 3};
  std::size_t side = 56;  // after the stem's max pool
  for (std::size_t stage = 0; stage < 4; ++stage) {
    const std::size_t width = std::size_t{64} << stage;
    for (std::size_t i = 0; i < blocks[stage]; ++i) {
      const std::size_t in_side = side;
      if (stage > 0 && i == 0) side /= 2;
      expected.push_back(map(width, in_side));               // 1x1 reduce
      expected.push_back(map(width, side));                  // 3x3, strided in a first block
      expected.push_back(map(4 * width, side));              // 1x1 expand
      if (i == 0) expected.push_back(map(4 * width, side));  // the projection, as the zoo: last
    }
  }
  std::vector<std::size_t> convolutions;
  for (const auto& t : s.tensors) {
    if (t.name.ends_with(".output") &&
        s.operations[*t.created_by].kind == fp::op_kind::convolution) {
      convolutions.push_back(t.bytes);
    }
  }
  ASSERT_EQ(convolutions.size(), 53u);
  EXPECT_EQ(convolutions, expected);
}

// ---- Errors ----------------------------------------------------------------------------------

/// The message of the config_error `action` throws ("" when it throws none).
template <typename Action>
std::string config_error_message(Action action) {
  try {
    action();
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

TEST(AccessSequences, BadRequestsFailAsTheProfilesDo) {
  auto unknown_optimizer = request("mlp", 4);
  unknown_optimizer.optimizer = "rmsprop";
  for (const auto& r : {request("resnet5O", 4), request("mlp", 0), request("mlp", 4, {{"x", 1}}),
                        unknown_optimizer}) {
    const auto expected = config_error_message([&] { (void)generate_profile(r, v100()); });
    ASSERT_FALSE(expected.empty()) << r.model;
    EXPECT_EQ(config_error_message([&] { (void)generate_access_sequence(r, v100()); }), expected);
  }
}

}  // namespace
}  // namespace tandem::sim
