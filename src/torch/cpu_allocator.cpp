#include "tandem/torch/cpu_allocator.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "tandem/common/error.hpp"
#include "tandem/memory/region_pool.hpp"
#include "tandem/torch/job_binding.hpp"

namespace tandem::torch_support {

namespace {

// libtorch's allocator table is process-wide, so the installed pool is too.
std::atomic<memory::device_pool*> installed{nullptr};
c10::Allocator* previous = nullptr;
std::mutex install_mutex;
// Above the priority libtorch registers its default CPU allocator with, so that ours wins.
constexpr std::uint8_t priority = 1;

void free_pooled(void* ptr) {
  auto* pool = installed.load(std::memory_order_acquire);
  if (pool == nullptr) {
    std::fprintf(stderr, "tandem: a pooled tensor outlived the pool's installation; leaked\n");
    return;
  }
  if (!pool->owns(ptr)) {
    // Only raw_deallocate gets here with foreign memory: raw_allocate on a thread outside
    // every job made it with the previous allocator, whose deleter must free it.
    if (const auto deleter = previous->raw_deleter(); deleter != nullptr) deleter(ptr);
    return;
  }
  if (const auto owner = pool->owner_of(ptr)) {
    // The classifier learns lifetimes from its job's frees. Frees on other threads are not
    // seen (the job's thread frees nearly everything: autograd on the CPU runs on it too).
    if (const binding* job = current_binding();
        job != nullptr && job->classifier != nullptr && job->pool == pool && job->job == *owner) {
      job->classifier->on_free(ptr);
    }
    pool->deallocate(*owner, ptr);
  } else {
    pool->deallocate(memory::no_job, ptr);  // reported as an invalid free, pool untouched
  }
}

c10::DataPtr allocate_pooled(std::size_t bytes) {
  const binding* job = current_binding();
  auto* pool = installed.load(std::memory_order_acquire);
  if (job == nullptr || job->pool != pool) {
    return previous->allocate(bytes);
  }
  if (job->hook != nullptr) job->hook->before_allocation(bytes);
  // The scope's kind decides alone without a classifier, and is the classifier's fallback for
  // what it has not learned. An allocation is counted only once it succeeded, so a refused one
  // does not shift the positions.
  auto* classifier = job->classifier;
  const auto kind = classifier != nullptr ? classifier->classify(bytes, job->kind) : job->kind;
  void* ptr = nullptr;
  try {
    ptr = pool->allocate(job->job, *job->stream, bytes, kind);
  } catch (...) {
    if (job->hook != nullptr) job->hook->allocation_refused();
    throw;
  }
  if (classifier != nullptr) classifier->on_allocate(ptr, bytes);
  return {ptr, ptr, &free_pooled, c10::Device(c10::DeviceType::CPU)};
}

// libtorch 2.x changed c10::Allocator: allocate lost its const and copy_data became pure
// virtual. One shape per interface; only the one the installed headers declare is instantiated
// (the class templates are checked against their base only when used).
template <class Base>
class const_allocate_shape final : public Base {
 public:
  c10::DataPtr allocate(std::size_t bytes) const override { return allocate_pooled(bytes); }
  // Kernels that manage scratch memory by hand (convolutions, for one) use raw_allocate and
  // raw_deallocate, which need this: the context of every DataPtr above is its data pointer.
  c10::DeleterFnPtr raw_deleter() const override { return &free_pooled; }
};

template <class Base>
class mutable_allocate_shape final : public Base {
 public:
  c10::DataPtr allocate(std::size_t bytes) override { return allocate_pooled(bytes); }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pooled; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

template <class Allocator>
concept allocates_through_const = requires(const Allocator& allocator) {
  allocator.allocate(std::size_t{1});
};

using pool_allocator = std::conditional_t<allocates_through_const<c10::Allocator>,
                                          const_allocate_shape<c10::Allocator>,
                                          mutable_allocate_shape<c10::Allocator>>;

pool_allocator the_allocator;

}  // namespace

void install_cpu_allocator(memory::device_pool& pool) {
  std::lock_guard lock(install_mutex);
  TANDEM_EXPECTS(installed.load() == nullptr, usage_error,
                 "a pool is already installed as libtorch's CPU allocator; uninstall it first");
  TANDEM_EXPECTS(pool.backend().kind() == device::backend_kind::cpu, usage_error,
                 "only a pool on the CPU backend can be libtorch's CPU allocator (CPU tensors "
                 "must live in host memory); for a CUDA pool use install_cuda_allocator");
  if (previous == nullptr) previous = c10::GetAllocator(c10::DeviceType::CPU);
  installed.store(&pool, std::memory_order_release);
  c10::SetAllocator(c10::DeviceType::CPU, &the_allocator, priority);
}

void uninstall_cpu_allocator() noexcept {
  std::lock_guard lock(install_mutex);
  if (installed.load() == nullptr) return;
  c10::SetAllocator(c10::DeviceType::CPU, previous, priority);
  installed.store(nullptr, std::memory_order_release);
}

}  // namespace tandem::torch_support
