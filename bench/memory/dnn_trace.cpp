#include "dnn_trace.hpp"

#include <cmath>
#include <random>

namespace tandem::bench {

dnn_trace make_dnn_trace(std::uint64_t seed, std::size_t layers, std::size_t first_activation) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::size_t> temporary(4u << 10, 512u << 10);
  dnn_trace trace;
  auto new_slot = [&] { return static_cast<std::uint32_t>(trace.slots++); };
  auto scratch = [&] {
    const auto slot = new_slot();
    trace.ops.push_back({true, slot, temporary(random), memory::alloc_kind::temporary});
    trace.ops.push_back({false, slot, 0, memory::alloc_kind::temporary});
  };
  std::vector<std::uint32_t> activations;
  std::vector<std::size_t> sizes;
  for (std::size_t layer = 0; layer < layers; ++layer) {
    // Halves every 10 layers, with a little jitter so that sizes rarely repeat exactly.
    const double shrink = std::exp2(-static_cast<double>(layer) / 10.0);
    const double jitter = 0.9 + 0.2 * std::uniform_real_distribution<double>(0, 1)(random);
    const auto bytes =
        static_cast<std::size_t>(static_cast<double>(first_activation) * shrink * jitter);
    const auto slot = new_slot();
    trace.ops.push_back({true, slot, bytes, memory::alloc_kind::feature_map});
    activations.push_back(slot);
    sizes.push_back(bytes);
    scratch();
    scratch();
  }
  std::uint32_t previous_gradient = 0;
  bool have_gradient = false;
  for (std::size_t layer = layers; layer-- > 0;) {
    const auto gradient = new_slot();
    trace.ops.push_back({true, gradient, sizes[layer], memory::alloc_kind::gradient});
    scratch();
    trace.ops.push_back({false, activations[layer], 0, memory::alloc_kind::feature_map});
    if (have_gradient)
      trace.ops.push_back({false, previous_gradient, 0, memory::alloc_kind::gradient});
    scratch();
    previous_gradient = gradient;
    have_gradient = true;
  }
  trace.ops.push_back({false, previous_gradient, 0, memory::alloc_kind::gradient});
  return trace;
}

std::vector<std::size_t> make_parameter_sizes(std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 160; ++i) {  // about 100 MiB of weights, biases and momentum
    sizes.push_back(i % 2 == 0
                        ? std::uniform_int_distribution<std::size_t>(256u << 10, 2u << 20)(random)
                        : std::uniform_int_distribution<std::size_t>(256, 8u << 10)(random));
  }
  return sizes;
}

}  // namespace tandem::bench
