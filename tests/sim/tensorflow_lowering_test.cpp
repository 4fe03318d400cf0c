// TensorFlow 1.x's lowering of a catalogue network (src/sim/catalog_tensorflow.cpp): the same
// arithmetic, bytes and memory issued as more operations; and through the generator, a model
// with `framework = 1` spends more host time on the same device work and memory.

#include <gtest/gtest.h>

#include "../../src/sim/catalog_iteration.hpp"
#include "../../src/sim/catalog_layers.hpp"
#include "../../src/sim/catalog_tensorflow.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/profile_generator.hpp"

namespace tandem::sim::catalog {
namespace {

/// A convolution with batch norm, dropout, a linear layer and a layer norm.
network small_network() {
  network net;
  net.batch = 8;
  const image in = input_images(net, {3, 16, 16});
  conv_bn(net, "conv", in, square_conv(8, 3), activation::relu);
  dropout(net, "dropout", net.batch * 8 * 16 * 16);
  linear(net, "fc", net.batch, 8 * 16 * 16, 10);
  layer_norm(net, "norm", net.batch, 10);
  return net;
}

int forward_kernels(const network& net, const std::string& name) {
  for (const auto& l : net.layers) {
    if (l.name == name) return l.forward.kernels;
  }
  ADD_FAILURE() << "no layer " << name;
  return 0;
}

TEST(TensorFlowLowering, IssuesMoreOperationsForTheSameWorkAndMemory) {
  const network eager = small_network();
  network graph = small_network();
  lower_as_tensorflow1(graph, false);
  ASSERT_EQ(graph.layers.size(), eager.layers.size());
  int more = 0;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const auto& g = graph.layers[i];
    const auto& e = eager.layers[i];
    EXPECT_EQ(g.forward.flops, e.forward.flops) << g.name;
    EXPECT_EQ(g.forward.bytes, e.forward.bytes) << g.name;
    EXPECT_EQ(g.backward.bytes, e.backward.bytes) << g.name;
    EXPECT_EQ(g.output_bytes, e.output_bytes) << g.name;
    EXPECT_EQ(g.saved_bytes, e.saved_bytes) << g.name;
    EXPECT_GE(g.forward.kernels, e.forward.kernels) << g.name;
    more += g.forward.kernels - e.forward.kernels;
  }
  EXPECT_GT(more, 0);
  // Batch norm's moving averages; dropout and layer norm unfused; the weights untouched
  // without weight decay.
  EXPECT_EQ(forward_kernels(graph, "conv_bn"), forward_kernels(eager, "conv_bn") + 6);
  EXPECT_EQ(forward_kernels(graph, "dropout"), 5);
  EXPECT_EQ(forward_kernels(graph, "norm"), 11);
  EXPECT_EQ(forward_kernels(graph, "conv"), forward_kernels(eager, "conv"));
  // The optimizer updates each parameter tensor with an operation of its own, where PyTorch's
  // foreach step takes them all in a few launches.
  int tensors = 0;
  for (const auto& l : graph.layers) tensors += static_cast<int>(l.parameters.size());
  EXPECT_GE(tensors, 6);
  EXPECT_EQ(optimizer_step(graph, optimizer_kind::sgd).cost.kernels, tensors);
  EXPECT_EQ(optimizer_step(graph, optimizer_kind::adam).cost.kernels, tensors);
  EXPECT_LT(optimizer_step(eager, optimizer_kind::sgd).cost.kernels, tensors);
}

TEST(TensorFlowLowering, WeightDecayAddsAnL2LossPerWeight) {
  network without = small_network();
  network with = small_network();
  lower_as_tensorflow1(without, false);
  lower_as_tensorflow1(with, true);
  EXPECT_EQ(forward_kernels(with, "conv"), forward_kernels(without, "conv") + 2);
  EXPECT_EQ(forward_kernels(with, "fc"), forward_kernels(without, "fc") + 2);
  EXPECT_EQ(forward_kernels(with, "dropout"), forward_kernels(without, "dropout"));
}

TEST(TensorFlowLowering, AModelLoweredForTensorFlowSpendsMoreHostTimeOnTheSameDeviceWork) {
  const auto& gpu = find_gpu("2080ti");
  for (const std::string model : {"nasnet", "bert_base", "inception_v3"}) {
    model_request r{.model = model, .batch_size = 16, .options = {}, .optimizer = "sgd"};
    const job_profile eager = generate_profile(r, gpu);
    r.options["framework"] = 1;
    const job_profile graph = generate_profile(r, gpu);
    double eager_host = 0;
    double graph_host = 0;
    double eager_device = 0;
    double graph_device = 0;
    ASSERT_EQ(graph.operations.size(), eager.operations.size()) << model;
    for (std::size_t i = 0; i < graph.operations.size(); ++i) {
      eager_host += eager.operations[i].host_s;
      graph_host += graph.operations[i].host_s;
      eager_device += eager.operations[i].device_time();
      graph_device += graph.operations[i].device_time();
    }
    EXPECT_GT(graph_host, 1.5 * eager_host) << model;
    // Only the shortest kernel's time per added operation reaches the device.
    EXPECT_LT(graph_device, 1.2 * eager_device) << model;
    EXPECT_GE(graph_device, eager_device) << model;
    EXPECT_EQ(graph.peak_live_bytes, eager.peak_live_bytes) << model;
    EXPECT_EQ(graph.persistent_bytes(), eager.persistent_bytes()) << model;
  }
}

}  // namespace
}  // namespace tandem::sim::catalog
