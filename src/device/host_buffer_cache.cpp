#include "tandem/device/host_buffer_cache.hpp"

#include <algorithm>
#include <utility>

namespace tandem::device {

struct host_buffer_cache::shelf {
  std::mutex mutex;
  bool open = true;  ///< false once the cache is gone: buffers given back are freed
  std::map<std::size_t, std::vector<std::unique_ptr<host_buffer>>> idle;  ///< by requested size
  stats counts;

  /// `buffer`, asked for as `bytes`, comes back: kept, or freed (outside the lock) when keeping
  /// it would hold more than was ever in use at once.
  void give_back(std::size_t bytes, std::unique_ptr<host_buffer> buffer) {
    std::unique_ptr<host_buffer> to_free;
    {
      std::lock_guard lock(mutex);
      counts.in_use_bytes -= buffer->size();
      if (open &&
          counts.kept_bytes + counts.in_use_bytes + buffer->size() <= counts.most_in_use_bytes) {
        counts.kept_bytes += buffer->size();
        idle[bytes].push_back(std::move(buffer));
      } else {
        to_free = std::move(buffer);
      }
    }
  }
};

namespace {

/// A cached buffer as its taker sees it: the same memory, given back when dropped.
class lent_buffer final : public host_buffer {
 public:
  lent_buffer(std::unique_ptr<host_buffer> inner, std::size_t bytes,
              std::shared_ptr<host_buffer_cache::shelf> home)
      : host_buffer(inner->data(), inner->size()),
        inner_(std::move(inner)),
        bytes_(bytes),
        home_(std::move(home)) {}
  ~lent_buffer() override { home_->give_back(bytes_, std::move(inner_)); }
  lent_buffer(const lent_buffer&) = delete;
  lent_buffer& operator=(const lent_buffer&) = delete;

 private:
  std::unique_ptr<host_buffer> inner_;
  std::size_t bytes_;
  std::shared_ptr<host_buffer_cache::shelf> home_;
};

}  // namespace

host_buffer_cache::host_buffer_cache(backend& device)
    : device_(device), shelf_(std::make_shared<shelf>()) {}

host_buffer_cache::~host_buffer_cache() {
  std::map<std::size_t, std::vector<std::unique_ptr<host_buffer>>> idle;
  {
    std::lock_guard lock(shelf_->mutex);
    shelf_->open = false;
    idle = std::move(shelf_->idle);
    shelf_->idle.clear();
    shelf_->counts.kept_bytes = 0;
  }
  // Freed here, while the backend that made them is alive.
}

std::unique_ptr<host_buffer> host_buffer_cache::take(std::size_t bytes) {
  std::unique_ptr<host_buffer> buffer;
  {
    std::lock_guard lock(shelf_->mutex);
    ++shelf_->counts.taken;
    if (const auto found = shelf_->idle.find(bytes); found != shelf_->idle.end()) {
      buffer = std::move(found->second.back());
      found->second.pop_back();
      if (found->second.empty()) shelf_->idle.erase(found);
      shelf_->counts.kept_bytes -= buffer->size();
      ++shelf_->counts.reused;
    }
  }
  if (!buffer) buffer = device_.allocate_host(bytes);
  {
    std::lock_guard lock(shelf_->mutex);
    auto& counts = shelf_->counts;
    counts.in_use_bytes += buffer->size();
    counts.most_in_use_bytes = std::max(counts.most_in_use_bytes, counts.in_use_bytes);
  }
  return std::make_unique<lent_buffer>(std::move(buffer), bytes, shelf_);
}

host_buffer_cache::stats host_buffer_cache::statistics() const {
  std::lock_guard lock(shelf_->mutex);
  return shelf_->counts;
}

}  // namespace tandem::device
