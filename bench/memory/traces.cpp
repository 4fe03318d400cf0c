#include "traces.hpp"

#include <array>
#include <random>
#include <stdexcept>

namespace tandem::bench {

namespace {

using memory::alloc_kind;

/// Appends events and keeps the live-bytes peak; reuses freed slots so that replays touch a
/// small slot table.
class trace_builder {
 public:
  explicit trace_builder(trace& out) : out_(out) {
    for (auto bytes : out_.persistent) live_ += bytes;
    out_.peak_live_bytes = live_;
  }

  std::uint32_t allocate(std::size_t bytes, alloc_kind kind) {
    std::uint32_t slot = 0;
    if (spare_.empty()) {
      slot = static_cast<std::uint32_t>(out_.slots++);
      sizes_.push_back(0);
    } else {
      slot = spare_.back();
      spare_.pop_back();
    }
    sizes_[slot] = bytes;
    live_ += bytes;
    if (live_ > out_.peak_live_bytes) {
      out_.peak_live_bytes = live_;
      out_.peak_event = out_.events.size();
    }
    out_.events.push_back({true, slot, bytes, kind});
    return slot;
  }

  void free(std::uint32_t slot) {
    live_ -= sizes_[slot];
    out_.events.push_back({false, slot, 0, alloc_kind::unknown});
    spare_.push_back(slot);
  }

  /// A workspace: allocated and freed right away.
  void scratch(std::size_t bytes) { free(allocate(bytes, alloc_kind::temporary)); }

 private:
  trace& out_;
  std::size_t live_ = 0;
  std::vector<std::size_t> sizes_;  // by slot
  std::vector<std::uint32_t> spare_;
};

/// A layer of the network as memory sees it.
struct layer {
  std::size_t output_bytes;   // saved activation (fp16)
  std::size_t channels;       // of its batch norm; 0 for none
  std::size_t weight_params;  // fp32 parameters in its weight (bias counted by `bias`)
  bool bias;
};

std::vector<layer> resnet50_layers(std::size_t batch) {
  const auto activation = [batch](std::size_t channels, std::size_t side) {
    return batch * channels * side * side * 2;
  };
  std::vector<layer> layers;
  const auto conv = [&](std::size_t in, std::size_t out, std::size_t kernel, std::size_t side) {
    layers.push_back({activation(out, side), out, in * out * kernel * kernel, false});
  };
  conv(3, 64, 7, 112);                                      // stem
  layers.push_back({activation(64, 56), 0, 0, false});      // max-pool
  constexpr std::array<std::size_t, 4> blocks{3, 4, 6, 3};  // ResNet-50's bottleneck counts
  std::size_t in = 64;
  std::size_t side = 56;
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    const std::size_t inner = std::size_t{64} << stage;
    for (std::size_t block = 0; block < blocks[stage]; ++block) {
      const std::size_t in_side = side;
      if (block == 0 && stage > 0) side /= 2;  // the stride sits in the 3x3 conv (v1.5)
      conv(in, inner, 1, in_side);
      conv(inner, inner, 3, side);
      conv(inner, 4 * inner, 1, side);
      if (block == 0) conv(in, 4 * inner, 1, side);  // projection shortcut
      in = 4 * inner;
    }
  }
  layers.push_back({batch * 1000 * 2, 0, in * 1000, true});  // fully connected
  return layers;
}

}  // namespace

trace make_resnet50_trace(std::uint64_t seed, std::size_t batch) {
  const auto layers = resnet50_layers(batch);
  trace out;
  // Weights and batch-norm affine parameters with their momentum buffers, plus running stats.
  for (const auto& l : layers) {
    if (l.weight_params > 0) out.persistent.insert(out.persistent.end(), 2, l.weight_params * 4);
    if (l.bias) out.persistent.insert(out.persistent.end(), 2, std::size_t{1000} * 4);
    if (l.channels > 0) out.persistent.insert(out.persistent.end(), 6, l.channels * 4);
  }

  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::size_t> workspace_bytes(4 << 10, 512 << 10);
  std::uniform_int_distribution<int> workspace_count(1, 3);
  trace_builder build(out);
  const auto workspaces = [&] {
    for (int n = workspace_count(random); n > 0; --n) build.scratch(workspace_bytes(random));
  };

  const auto input = build.allocate(batch * 3 * 224 * 224 * 2, alloc_kind::feature_map);
  std::vector<std::uint32_t> saved(layers.size());
  std::vector<std::uint32_t> norm_stats(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    saved[i] = build.allocate(layers[i].output_bytes, alloc_kind::feature_map);
    workspaces();
    // Batch norm saves the batch mean and inverse std for its backward pass.
    if (layers[i].channels > 0) {
      norm_stats[i] = build.allocate(layers[i].channels * 4 * 2, alloc_kind::feature_map);
    }
  }

  // Backward: each layer turns the gradient of its output into the gradient of its input, and
  // the gradients of its parameters, which live until the optimizer step.
  std::vector<std::uint32_t> parameter_grads;
  auto output_grad = build.allocate(layers.back().output_bytes, alloc_kind::gradient);
  for (std::size_t i = layers.size(); i-- > 0;) {
    const auto& l = layers[i];
    const bool first = i == 0;  // the input image needs no gradient
    const auto input_grad =
        first ? 0 : build.allocate(layers[i - 1].output_bytes, alloc_kind::gradient);
    workspaces();
    if (l.weight_params > 0) {
      parameter_grads.push_back(build.allocate(l.weight_params * 4, alloc_kind::gradient));
    }
    if (l.bias) parameter_grads.push_back(build.allocate(1000 * 4, alloc_kind::gradient));
    if (l.channels > 0) {
      parameter_grads.push_back(build.allocate(l.channels * 4 * 2, alloc_kind::gradient));
      build.free(norm_stats[i]);
    }
    build.free(saved[i]);
    build.free(output_grad);
    output_grad = input_grad;
  }
  build.free(input);
  workspaces();                                        // the optimizer step's scratch
  for (auto slot : parameter_grads) build.free(slot);  // zero_grad(set_to_none=True)
  return out;
}

trace make_random_trace(std::uint64_t seed, std::size_t steps, std::size_t min_bytes,
                        std::size_t max_bytes, std::size_t cap, double allocate_probability) {
  if (min_bytes == 0 || min_bytes > max_bytes || max_bytes > cap) {
    throw std::invalid_argument("make_random_trace: need 0 < min_bytes <= max_bytes <= cap");
  }
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::size_t> size(min_bytes, max_bytes);
  std::bernoulli_distribution allocate(allocate_probability);
  trace out;
  trace_builder build(out);
  struct block {
    std::uint32_t slot;
    std::size_t bytes;
  };
  std::vector<block> live;
  std::size_t live_bytes = 0;
  for (std::size_t step = 0; step < steps; ++step) {
    const auto bytes = size(random);
    const bool wants_allocation = allocate(random) || live.empty();
    if (wants_allocation && live_bytes + bytes <= cap) {
      live.push_back({build.allocate(bytes, alloc_kind::unknown), bytes});
      live_bytes += bytes;
      continue;
    }
    // A free, chosen or forced by the cap.
    const auto victim = std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(random);
    build.free(live[victim].slot);
    live_bytes -= live[victim].bytes;
    live[victim] = live.back();
    live.pop_back();
  }
  for (const auto& b : live) build.free(b.slot);
  return out;
}

}  // namespace tandem::bench
