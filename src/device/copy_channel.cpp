#include "tandem/device/copy_channel.hpp"

#include <utility>

namespace tandem::device {

copy_channel::copy_channel(backend& device, std::string name)
    : device_(device), stream_(device.create_stream(std::move(name), stream_kind::copy)) {}

event_ptr copy_channel::copy(void* dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  stream_->copy_async(dst, src, bytes);
  bytes_issued_ += bytes;
  return stream_->record();
}

std::unique_ptr<host_buffer> copy_channel::host_memory(std::size_t bytes) {
  return device_.allocate_host(bytes);
}

std::size_t copy_channel::bytes_issued() const {
  std::lock_guard lock(mutex_);
  return bytes_issued_;
}

}  // namespace tandem::device
