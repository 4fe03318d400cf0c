#include "allocators.hpp"

#include <jemalloc/jemalloc.h>
#include <mimalloc.h>
#include <sys/mman.h>

#include <map>
#include <mutex>
#include <stdexcept>

#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/device_pool.hpp"

// glibc's own entry points: linking jemalloc replaces malloc for the whole process, so the glibc
// baseline calls these, and each other baseline its own explicit API.
extern "C" void* __libc_malloc(std::size_t bytes);
extern "C" void __libc_free(void* ptr);

namespace tandem::bench {

namespace {

constexpr std::size_t arena_bytes = 32 * GiB;  // virtual: nothing is touched

class tandem_allocator final : public allocator {
 public:
  explicit tandem_allocator(std::size_t region_size)
      : backend_({.memory_limit = 2 * arena_bytes}), pool_(backend_, options(region_size)) {}

  std::unique_ptr<session> open_session() override {
    return std::make_unique<tandem_session>(pool_, backend_);
  }

 private:
  static memory::pool_options options(std::size_t region_size) {
    memory::pool_options out;
    out.capacity = arena_bytes;
    out.region_size = region_size;
    return out;
  }

  class tandem_session final : public session {
   public:
    tandem_session(memory::device_pool& pool, device::cpu_backend& backend)
        : pool_(pool),
          stream_(backend.create_stream("bench", device::stream_kind::compute)),
          job_(pool.add_job("bench")) {}
    ~tandem_session() override { pool_.remove_job(job_); }
    void* allocate(std::size_t bytes, memory::alloc_kind kind) override {
      return pool_.allocate(job_, *stream_, bytes, kind);
    }
    void deallocate(void* ptr, std::size_t) override { pool_.deallocate(job_, ptr); }
    [[nodiscard]] std::size_t reserved_bytes() const override {
      return pool_.stats(job_).reserved_bytes;
    }

   private:
    memory::device_pool& pool_;
    std::unique_ptr<device::stream> stream_;
    memory::job_id job_;
  };

  device::cpu_backend backend_;
  memory::device_pool pool_;
};

/// A session for allocators whose functions need no per-thread state.
template <void* (*Allocate)(std::size_t), void (*Deallocate)(void*, std::size_t)>
class plain_allocator final : public allocator {
  class plain_session final : public session {
   public:
    void* allocate(std::size_t bytes, memory::alloc_kind) override { return Allocate(bytes); }
    void deallocate(void* ptr, std::size_t bytes) override { Deallocate(ptr, bytes); }
  };

 public:
  std::unique_ptr<session> open_session() override { return std::make_unique<plain_session>(); }
};

void* glibc_allocate(std::size_t bytes) {
  return __libc_malloc(bytes);
}
void glibc_deallocate(void* ptr, std::size_t) {
  __libc_free(ptr);
}
void* jemalloc_allocate(std::size_t bytes) {
  return mallocx(bytes, 0);
}
void jemalloc_deallocate(void* ptr, std::size_t) {
  dallocx(ptr, 0);
}
void* mimalloc_allocate(std::size_t bytes) {
  return mi_malloc(bytes);
}
void mimalloc_deallocate(void* ptr, std::size_t) {
  mi_free(ptr);
}

/// The naive baseline over the same kind of memory: one address-ordered free list, first fit,
/// splitting and coalescing, one lock.
class first_fit_allocator final : public allocator {
 public:
  first_fit_allocator() {
    base_ = static_cast<std::byte*>(::mmap(nullptr, arena_bytes, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (base_ == MAP_FAILED) throw std::runtime_error("first_fit: mmap failed");
    free_.emplace(0, arena_bytes);
  }

  std::unique_ptr<session> open_session() override {
    return std::make_unique<first_fit_session>(*this);
  }

 private:
  void* allocate(std::size_t bytes) {
    bytes = align_up(bytes == 0 ? 1 : bytes, 512);
    std::lock_guard lock(mutex_);
    for (auto run = free_.begin(); run != free_.end(); ++run) {
      if (run->second < bytes) continue;
      const auto [offset, size] = *run;
      free_.erase(run);
      if (size > bytes) free_.emplace(offset + bytes, size - bytes);
      high_water_ = std::max(high_water_, offset + bytes);
      return base_ + offset;
    }
    throw std::bad_alloc();
  }

  void deallocate(void* ptr, std::size_t bytes) {
    bytes = align_up(bytes == 0 ? 1 : bytes, 512);
    std::size_t offset = static_cast<std::size_t>(static_cast<std::byte*>(ptr) - base_);
    std::lock_guard lock(mutex_);
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == offset + bytes) {
      bytes += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        bytes += prev->second;
        free_.erase(prev);
      }
    }
    free_.emplace(offset, bytes);
  }

  class first_fit_session final : public session {
   public:
    explicit first_fit_session(first_fit_allocator& owner) : owner_(owner) {}
    void* allocate(std::size_t bytes, memory::alloc_kind) override {
      return owner_.allocate(bytes);
    }
    void deallocate(void* ptr, std::size_t bytes) override { owner_.deallocate(ptr, bytes); }
    /// What the allocator had to take from its memory: up to the highest end it ever used.
    [[nodiscard]] std::size_t reserved_bytes() const override {
      std::lock_guard lock(owner_.mutex_);
      return owner_.high_water_;
    }

   private:
    first_fit_allocator& owner_;
  };

  std::byte* base_ = nullptr;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_;  // offset -> size; guarded by mutex_
  std::size_t high_water_ = 0;               // guarded by mutex_
};

}  // namespace

const std::vector<std::string>& allocator_names() {
  static const std::vector<std::string> names{"tandem",   "tandem_2MiB", "glibc",
                                              "jemalloc", "mimalloc",    "first_fit"};
  return names;
}

allocator& allocator_named(const std::string& name) {
  // Created once and never destroyed: benchmark threads may still hold sessions at exit.
  static std::mutex mutex;
  static std::map<std::string, allocator*> made;
  std::lock_guard lock(mutex);
  if (auto found = made.find(name); found != made.end()) return *found->second;
  allocator* created = nullptr;
  if (name == "tandem") created = new tandem_allocator(64 * MiB);
  if (name == "tandem_2MiB") created = new tandem_allocator(2 * MiB);
  if (name == "glibc") created = new plain_allocator<glibc_allocate, glibc_deallocate>();
  if (name == "jemalloc") created = new plain_allocator<jemalloc_allocate, jemalloc_deallocate>();
  if (name == "mimalloc") created = new plain_allocator<mimalloc_allocate, mimalloc_deallocate>();
  if (name == "first_fit") created = new first_fit_allocator();
  if (created == nullptr) throw std::invalid_argument("unknown allocator " + name);
  made.emplace(name, created);
  return *created;
}

}  // namespace tandem::bench
