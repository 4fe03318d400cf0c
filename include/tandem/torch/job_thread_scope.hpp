#pragma once
// Marks the calling thread as a job's own while a job_binding lives on it. Header-only: the
// runtime's memory waits ask it without linking libtorch.
//
// Why it matters: on a CUDA device libtorch runs every job's backward pass on one autograd
// thread per device, and those allocations reach the pool through the job's stream with no
// binding on that thread. A memory wait there would hold the thread that every other job's
// backward pass needs, so the job that would return the memory could never finish: such a wait
// is refused instead (region_waiter). On the CPU backend every allocation that reaches the pool
// comes from a bound thread.

namespace tandem::torch_support {

class job_thread_scope {
 public:
  job_thread_scope() { ++depth_; }
  ~job_thread_scope() { --depth_; }
  job_thread_scope(const job_thread_scope&) = delete;
  job_thread_scope& operator=(const job_thread_scope&) = delete;

  /// Whether the calling thread is a job's own now.
  [[nodiscard]] static bool here() { return depth_ > 0; }

 private:
  static inline thread_local int depth_ = 0;
};

}  // namespace tandem::torch_support
