#include "buffer_snapshot.hpp"

#include <cstring>

namespace tandem::runtime::detail {

bool buffer_snapshot::save(torch::nn::Module& module) {
  buffers_.clear();
  for (auto& buffer : module.buffers()) {
    if (!buffer.defined()) continue;
    // A device tensor would need a copy that waits for its stream; CPU bytes are copied here.
    if (!buffer.is_cpu() || !buffer.is_contiguous()) return false;
    buffers_.push_back(buffer);
  }
  values_.resize(buffers_.size());
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const auto bytes = buffers_[i].nbytes();
    values_[i].resize(bytes);
    if (bytes > 0) std::memcpy(values_[i].data(), buffers_[i].data_ptr(), bytes);
  }
  return true;
}

void buffer_snapshot::restore() {
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    if (!values_[i].empty())
      std::memcpy(buffers_[i].data_ptr(), values_[i].data(), values_[i].size());
  }
}

}  // namespace tandem::runtime::detail
