#pragma once
// A module's buffers (batch norm's running statistics and batch counters) copied to host memory
// outside the pool before a forward pass updates them in place, so that a forward pass cut
// short (iteration_restarted) can be undone exactly and its rerun gives the losses of a run
// that never restarted.

#include <torch/torch.h>

#include <cstddef>
#include <vector>

namespace tandem::runtime::detail {

class buffer_snapshot {
 public:
  /// Copies every buffer of `module`. False when one could not be restored exactly (not a
  /// contiguous CPU tensor): then the forward pass must not be restarted.
  [[nodiscard]] bool save(torch::nn::Module& module);
  /// Writes the values saved last back into their buffers.
  void restore();

 private:
  std::vector<torch::Tensor> buffers_;
  std::vector<std::vector<std::byte>> values_;  // reused: no allocation once sizes are known
};

}  // namespace tandem::runtime::detail
