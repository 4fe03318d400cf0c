#include "tandem/device/copy_channel.hpp"

#include <utility>

namespace tandem::device {

copy_channel::copy_channel(backend& device, std::string name)
    : stream_(device.create_stream(std::move(name), stream_kind::copy)), host_buffers_(device) {}

event_ptr copy_channel::copy(void* dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  stream_->copy_async(dst, src, bytes);
  bytes_issued_ += bytes;
  return stream_->record();
}

std::unique_ptr<host_buffer> copy_channel::host_memory(std::size_t bytes) {
  return host_buffers_.take(bytes);
}

host_buffer_cache::stats copy_channel::host_memory_statistics() const {
  return host_buffers_.statistics();
}

std::size_t copy_channel::bytes_issued() const {
  std::lock_guard lock(mutex_);
  return bytes_issued_;
}

}  // namespace tandem::device
