// The optimizer step's order as rewrites of a sequence: split per parameter, then run each
// update as soon as its gradient is complete. A two-layer net worked out on paper: weights of
// 40 and 20 bytes, gradients zeroed in place before the forward pass, one momentum each.

#include "tandem/footprint/step_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "synthetic_sequences.hpp"
#include "tandem/common/error.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/plan.hpp"

namespace tandem::footprint {
namespace {

using testing::sequence_builder;

struct two_layers {
  access_sequence sequence;
  std::size_t w1 = 0, w2 = 0, g1 = 0, g2 = 0, m1 = 0, m2 = 0;
};

/// zero_grad, f1, f2, b2, b1, one fused step of 6 s; 1 s each otherwise. f1's output (5 bytes)
/// is read by f2 and b2 (its backward needs it); b2's input gradient (3 bytes) by b1.
two_layers two_layer_net() {
  sequence_builder b;
  const auto zero = b.op("zero_grad", 1, phase::optimizer, op_kind::optimizer);
  const auto f1 = b.op("f1", 1, phase::forward, op_kind::matmul);
  const auto f2 = b.op("f2", 1, phase::forward, op_kind::matmul);
  const auto b2 = b.op("b2", 1, phase::backward, op_kind::matmul);
  const auto b1 = b.op("b1", 1, phase::backward, op_kind::matmul);
  const auto step = b.op("sgd_step", 6, phase::optimizer, op_kind::optimizer);
  two_layers net;
  net.w1 = b.tensor("l1.weight", 40, std::nullopt, {f1, b1, step}, tensor_role::parameter);
  net.w2 = b.tensor("l2.weight", 20, std::nullopt, {f2, b2, step}, tensor_role::parameter);
  net.g1 = b.tensor("l1.weight.grad", 40, zero, {b1, step}, tensor_role::gradient, step);
  net.g2 = b.tensor("l2.weight.grad", 20, zero, {b2, step}, tensor_role::gradient, step);
  net.m1 =
      b.tensor("l1.weight.momentum_buffer", 40, std::nullopt, {step}, tensor_role::optimizer_state);
  net.m2 =
      b.tensor("l2.weight.momentum_buffer", 20, std::nullopt, {step}, tensor_role::optimizer_state);
  b.tensor("f1.out", 5, f1, {f2, b2});
  b.tensor("b2.input_gradient", 3, b2, {b1}, tensor_role::gradient);
  net.sequence = b.get();
  validate(net.sequence);
  return net;
}

std::size_t op_named(const access_sequence& s, const std::string& name) {
  const auto found = std::find_if(s.operations.begin(), s.operations.end(),
                                  [&](const operation& op) { return op.name == name; });
  EXPECT_NE(found, s.operations.end()) << name;
  return static_cast<std::size_t>(found - s.operations.begin());
}

TEST(StepOrder, PerParameterSplitsTheStepByBytesAndFreesEachGradientAfterItsOwnUpdate) {
  const auto net = two_layer_net();
  const auto s = per_parameter_step(net.sequence);
  ASSERT_EQ(s.operations.size(), 7u);
  const auto u1 = op_named(s, "sgd_step[l1.weight]");
  const auto u2 = op_named(s, "sgd_step[l2.weight]");
  EXPECT_EQ(u2, u1 + 1) << "in the order of the parameters' tensors";
  // 120 of the step's 180 bytes are l1's: 4 of its 6 s.
  EXPECT_DOUBLE_EQ(s.operations[u1].duration_s, 4);
  EXPECT_DOUBLE_EQ(s.operations[u2].duration_s, 2);
  EXPECT_DOUBLE_EQ(s.iteration_s(), net.sequence.iteration_s());
  EXPECT_EQ(s.tensors[net.m1].read_by, std::vector<std::size_t>{u1});
  EXPECT_EQ(s.tensors[net.g1].freed_after, u1);
  EXPECT_EQ(s.tensors[net.g2].freed_after, u2);
  EXPECT_EQ(s.tensors[net.w2].read_by.back(), u2);
}

TEST(StepOrder, InBackwardRunsEachUpdateAfterItsGradientIsCompleteAndMakesTheGradientThere) {
  const auto net = two_layer_net();
  const auto stepped = per_parameter_step(net.sequence);
  const auto s = step_in_backward(stepped);
  std::vector<std::string> names;
  for (const auto& op : s.operations) names.push_back(op.name);
  EXPECT_EQ(names, (std::vector<std::string>{"zero_grad", "f1", "f2", "b2", "sgd_step[l2.weight]",
                                             "b1", "sgd_step[l1.weight]"}));
  EXPECT_DOUBLE_EQ(s.iteration_s(), net.sequence.iteration_s()) << "durations unchanged";
  const auto b2 = op_named(s, "b2");
  const auto u2 = op_named(s, "sgd_step[l2.weight]");
  EXPECT_DOUBLE_EQ(s.operations[u2].start_s, s.operations[b2].start_s + 1);
  // l2's gradient is made by b2 (no longer read by it: it writes it) and lives until its update.
  EXPECT_EQ(s.tensors[net.g2].created_by, b2);
  EXPECT_EQ(s.tensors[net.g2].read_by, std::vector<std::size_t>{u2});
  EXPECT_EQ(s.tensors[net.g2].freed_after, u2);
  EXPECT_EQ(s.tensors[net.w2].read_by, (std::vector<std::size_t>{2, b2, u2}));

  // Vanilla peaks worked out. Per parameter after the backward pass, both gradients live from
  // zero_grad on beside the 120 bytes of weights and momenta; b2 also holds f1's output and
  // makes its input gradient: 120 + 60 + 5 + 3 = 188. In backward, l2's gradient is gone before
  // b1 makes l1's, beside b2's input gradient: 120 + 40 + 3 = 163.
  const cost_options costs{.copy_bandwidth = 1};
  EXPECT_EQ(predict(stepped, plan{}, costs).peak_bytes, 188u);
  EXPECT_EQ(predict(s, plan{}, costs).peak_bytes, 163u);
}

TEST(StepOrder, AFusedStepIsLeftWhereItIs) {
  const auto net = two_layer_net();
  EXPECT_EQ(step_in_backward(net.sequence), net.sequence);
}

TEST(StepOrder, InBackwardRefusesOverlappingOperations) {
  auto net = two_layer_net();
  net.sequence.operations[2].start_s -= 0.5;  // f2 starts inside f1
  EXPECT_THROW(static_cast<void>(step_in_backward(per_parameter_step(net.sequence))), usage_error);
}

}  // namespace
}  // namespace tandem::footprint
