#include "tandem/device/cpu_backend.hpp"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/device/detail/stream_ids.hpp"

namespace tandem::device {

const char* to_string(backend_kind kind) {
  switch (kind) {
    case backend_kind::cpu:
      return "cpu";
    case backend_kind::cuda:
      return "cuda";
  }
  return "unknown";
}

namespace {

std::size_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0
             ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size)
             : 0;
}

/// The queue a worker thread drains. Events keep it alive, so they may outlive their stream.
struct work_queue {
  std::mutex mutex;
  std::condition_variable work_ready;
  std::condition_variable work_done;
  std::deque<std::function<void()>> items;
  std::uint64_t enqueued = 0;               // guarded by mutex
  std::atomic<std::uint64_t> completed{0};  // written by the worker only
  bool stopping = false;                    // guarded by mutex
  std::exception_ptr first_error;           // guarded by mutex

  void push(std::function<void()> item) {
    {
      std::lock_guard lock(mutex);
      items.push_back(std::move(item));
      ++enqueued;
    }
    work_ready.notify_one();
  }

  void wait_for(std::uint64_t target) {
    if (completed.load(std::memory_order_acquire) >= target) return;
    std::unique_lock lock(mutex);
    work_done.wait(lock, [&] { return completed.load(std::memory_order_acquire) >= target; });
  }

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      work_ready.wait(lock, [&] { return stopping || !items.empty(); });
      if (items.empty()) return;  // stopping and drained
      auto item = std::move(items.front());
      items.pop_front();
      lock.unlock();
      std::exception_ptr failure;
      try {
        item();
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure && !first_error) first_error = failure;
      completed.fetch_add(1, std::memory_order_release);
      work_done.notify_all();
    }
  }
};

class cpu_event final : public event {
 public:
  cpu_event(std::shared_ptr<work_queue> queue, std::uint64_t target)
      : queue_(std::move(queue)), target_(target) {}
  [[nodiscard]] bool query() const override {
    return queue_->completed.load(std::memory_order_acquire) >= target_;
  }
  void synchronize() const override { queue_->wait_for(target_); }

 private:
  std::shared_ptr<work_queue> queue_;
  std::uint64_t target_;
};

class cpu_reservation final : public reservation {
 public:
  cpu_reservation(std::byte* base, std::size_t size, std::function<void()> on_release)
      : reservation(base, size), on_release_(std::move(on_release)) {}
  ~cpu_reservation() override {
    ::munmap(base(), size());
    on_release_();
  }

 private:
  std::function<void()> on_release_;
};

class cpu_host_buffer final : public host_buffer {
 public:
  explicit cpu_host_buffer(std::size_t size)
      : host_buffer(static_cast<std::byte*>(::operator new (size, std::align_val_t{4096})), size) {}
  ~cpu_host_buffer() override { ::operator delete (data(), std::align_val_t{4096}); }
};

}  // namespace

struct detail::cpu_backend_state {
  cpu_backend_options options;
  std::size_t limit = 0;
  std::mutex mutex;
  std::size_t reserved = 0;  // guarded by mutex
  stream_ids ids;
};

namespace {

class cpu_stream final : public stream {
 public:
  cpu_stream(std::shared_ptr<detail::cpu_backend_state> owner, std::uint32_t id, std::string name,
             stream_kind kind, double copy_bandwidth)
      : stream(id, std::move(name), kind),
        owner_(std::move(owner)),
        queue_(std::make_shared<work_queue>()),
        copy_bandwidth_(kind == stream_kind::copy ? copy_bandwidth : 0),
        worker_([q = queue_, k = kind] {
          // A copy holds the engine by sleeping for the modelled link's time; the default timer
          // slack (50 us) would add that much to every copy, which a GPU's copy engine does not.
          if (k == stream_kind::copy) ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
          q->run();
        }) {}

  ~cpu_stream() override {
    {
      std::lock_guard lock(queue_->mutex);
      queue_->stopping = true;
    }
    queue_->work_ready.notify_one();
    worker_.join();
    owner_->ids.give_back(id());
  }

  event_ptr record() override {
    std::lock_guard lock(queue_->mutex);
    return std::make_shared<cpu_event>(queue_, queue_->enqueued);
  }

  void wait(event_ptr done) override {
    TANDEM_EXPECTS(done != nullptr, usage_error, "stream::wait needs an event, got null");
    queue_->push([done = std::move(done)] { done->synchronize(); });
  }

  void synchronize() override {
    std::uint64_t target = 0;
    {
      std::lock_guard lock(queue_->mutex);
      target = queue_->enqueued;
    }
    queue_->wait_for(target);
    std::exception_ptr failure;
    {
      std::lock_guard lock(queue_->mutex);
      std::swap(failure, queue_->first_error);
    }
    if (failure) std::rethrow_exception(failure);
  }

  void memset_async(void* dst, int value, std::size_t bytes) override {
    queue_->push([dst, value, bytes] { std::memset(dst, value, bytes); });
  }

  void copy_async(void* dst, const void* src, std::size_t bytes) override {
    const double bandwidth = copy_bandwidth_;
    queue_->push([dst, src, bytes, bandwidth] {
      const auto start = std::chrono::steady_clock::now();
      std::memcpy(dst, src, bytes);
      if (bandwidth > 0) {
        // Hold the copy engine for as long as the modelled link would take.
        const auto due =
            start + std::chrono::duration<double>(static_cast<double>(bytes) / bandwidth);
        std::this_thread::sleep_until(due);
      }
    });
  }

  void launch_host(std::function<void()> fn) override {
    TANDEM_EXPECTS(fn != nullptr, usage_error, "launch_host needs a function, got an empty one");
    queue_->push(std::move(fn));
  }

 private:
  std::shared_ptr<detail::cpu_backend_state> owner_;
  std::shared_ptr<work_queue> queue_;
  double copy_bandwidth_;
  std::thread worker_;  // last: starts after the members it uses exist
};

}  // namespace

cpu_backend::cpu_backend(cpu_backend_options options)
    : state_(std::make_shared<detail::cpu_backend_state>()) {
  TANDEM_EXPECTS(options.copy_bandwidth >= 0, config_error,
                 "the CPU backend's copy bandwidth must be positive bytes per second, or 0 for "
                 "memcpy speed");
  state_->options = options;
  state_->limit = options.memory_limit != 0 ? options.memory_limit : physical_memory();
}

cpu_backend::~cpu_backend() = default;

std::string cpu_backend::describe() const {
  std::string text = "cpu (" + format_bytes(state_->limit) + " reservable, copy ";
  if (state_->options.copy_bandwidth > 0) {
    text += format_bytes(static_cast<std::size_t>(state_->options.copy_bandwidth)) + "/s)";
  } else {
    text += "at memcpy speed)";
  }
  return text;
}

std::size_t cpu_backend::total_memory() const {
  return state_->limit;
}

std::unique_ptr<reservation> cpu_backend::reserve(std::size_t bytes) {
  TANDEM_EXPECTS(bytes > 0, usage_error, "cannot reserve 0 bytes of device memory");
  {
    std::lock_guard lock(state_->mutex);
    TANDEM_EXPECTS(state_->reserved + bytes <= state_->limit, device_error,
                   "the CPU backend cannot reserve " + format_bytes(bytes) + ": " +
                       format_bytes(state_->limit - state_->reserved) + " of its " +
                       format_bytes(state_->limit) +
                       " limit is left; lower the pool capacity or raise the backend's "
                       "memory_limit");
    state_->reserved += bytes;
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    std::lock_guard lock(state_->mutex);
    state_->reserved -= bytes;
    TANDEM_FAIL(device_error, "mmap of " + format_bytes(bytes) +
                                  " failed: " + std::strerror(errno) + "; lower the pool capacity");
  }
  auto state = state_;
  return std::make_unique<cpu_reservation>(static_cast<std::byte*>(base), bytes, [state, bytes] {
    std::lock_guard lock(state->mutex);
    state->reserved -= bytes;
  });
}

std::unique_ptr<stream> cpu_backend::create_stream(std::string name, stream_kind kind) {
  const auto id = state_->ids.take();
  return std::make_unique<cpu_stream>(state_, id, std::move(name), kind,
                                      state_->options.copy_bandwidth);
}

std::unique_ptr<host_buffer> cpu_backend::allocate_host(std::size_t bytes) {
  TANDEM_EXPECTS(bytes > 0, usage_error, "cannot allocate an empty host buffer");
  return std::make_unique<cpu_host_buffer>(align_up(bytes, 4096));
}

void cpu_backend::launch(stream& target, std::function<void()> kernel) {
  target.launch_host(std::move(kernel));
}

}  // namespace tandem::device
