#include "allocators.hpp"

// jemalloc and mimalloc (Debian builds: unprefixed, and libmimalloc overrides malloc too) both
// export malloc/free, so linking them replaces malloc for the whole process (the first in link
// order wins; CMakeLists.txt puts jemalloc first). That is acceptable: every baseline here is
// called through its own explicit API, and glibc through __libc_malloc/__libc_free, which stay
// glibc's whatever malloc resolves to. Only tandem's internal bookkeeping (its std::set and
// std::map nodes) goes through the process malloc, i.e. jemalloc.
#include <jemalloc/jemalloc.h>
#include <mimalloc.h>

#include <new>

#include "first_fit.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/device_pool.hpp"

extern "C" void* __libc_malloc(std::size_t bytes);
extern "C" void __libc_free(void* ptr);

namespace tandem::bench {

namespace {

/// A pool on the CPU backend, created on first use and never destroyed: handles on other
/// benchmark threads may outlive any scope we could give it.
struct tandem_pool {
  explicit tandem_pool(std::size_t region_size)
      : backend({.memory_limit = pool_bytes}), pool(backend, options(region_size)) {}

  static memory::pool_options options(std::size_t region_size) {
    memory::pool_options out;
    out.capacity = pool_bytes;
    out.region_size = region_size;
    return out;
  }

  device::cpu_backend backend;
  memory::device_pool pool;
};

/// One job with one stream: what a training process is to the pool.
class tandem_allocator final : public allocator {
 public:
  explicit tandem_allocator(tandem_pool& shared)
      : pool_(shared.pool),
        stream_(shared.backend.create_stream("bench", device::stream_kind::compute)),
        job_(pool_.add_job("bench")) {}
  // The stream must outlive the job: remove_job waits for it.
  ~tandem_allocator() override { pool_.remove_job(job_); }
  tandem_allocator(const tandem_allocator&) = delete;
  tandem_allocator& operator=(const tandem_allocator&) = delete;

  void* allocate(std::size_t bytes, memory::alloc_kind kind) override {
    return pool_.allocate(job_, *stream_, bytes, kind);
  }
  void deallocate(void* ptr) override { pool_.deallocate(job_, ptr); }
  [[nodiscard]] std::optional<std::size_t> reserved_bytes() const override {
    return pool_.stats().reserved_bytes;
  }

 private:
  memory::device_pool& pool_;
  std::unique_ptr<device::stream> stream_;
  memory::job_id job_;
};

class glibc_allocator final : public allocator {
 public:
  void* allocate(std::size_t bytes, memory::alloc_kind) override {
    void* ptr = __libc_malloc(bytes);
    if (ptr == nullptr) throw std::bad_alloc();
    return ptr;
  }
  void deallocate(void* ptr) override { __libc_free(ptr); }
};

class jemalloc_allocator final : public allocator {
 public:
  void* allocate(std::size_t bytes, memory::alloc_kind) override {
    void* ptr = mallocx(bytes, 0);
    if (ptr == nullptr) throw std::bad_alloc();
    return ptr;
  }
  void deallocate(void* ptr) override { dallocx(ptr, 0); }
};

class mimalloc_allocator final : public allocator {
 public:
  void* allocate(std::size_t bytes, memory::alloc_kind) override {
    void* ptr = mi_malloc(bytes);
    if (ptr == nullptr) throw std::bad_alloc();
    return ptr;
  }
  void deallocate(void* ptr) override { mi_free(ptr); }
};

class first_fit_allocator final : public allocator {
 public:
  explicit first_fit_allocator(first_fit& shared) : shared_(shared) {
    shared_.reset_high_water();  // the footprint of this benchmark, not of earlier ones
  }
  void* allocate(std::size_t bytes, memory::alloc_kind) override { return shared_.allocate(bytes); }
  void deallocate(void* ptr) override { shared_.deallocate(ptr); }
  [[nodiscard]] std::optional<std::size_t> reserved_bytes() const override {
    return shared_.high_water();
  }

 private:
  first_fit& shared_;
};

template <std::size_t RegionSize>
std::unique_ptr<allocator> open_tandem() {
  static auto* shared = new tandem_pool(RegionSize);  // intentionally leaked, see tandem_pool
  return std::make_unique<tandem_allocator>(*shared);
}

std::unique_ptr<allocator> open_first_fit() {
  static auto* shared = new first_fit(pool_bytes);  // intentionally leaked, as above
  return std::make_unique<first_fit_allocator>(*shared);
}

}  // namespace

const std::vector<allocator_factory>& allocator_factories() {
  static const std::vector<allocator_factory> factories{
      {"tandem", open_tandem<64 * MiB>},
      {"tandem_2MiB", open_tandem<2 * MiB>},
      {"glibc", [] { return std::unique_ptr<allocator>(new glibc_allocator); }},
      {"jemalloc", [] { return std::unique_ptr<allocator>(new jemalloc_allocator); }},
      {"mimalloc", [] { return std::unique_ptr<allocator>(new mimalloc_allocator); }},
      {"first_fit", open_first_fit},
  };
  return factories;
}

}  // namespace tandem::bench
