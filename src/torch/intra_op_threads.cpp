#include "tandem/torch/intra_op_threads.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "tandem/common/error.hpp"

namespace tandem::torch_support {

namespace {

using set_num_threads_fn = void (*)(int);

// tandem is built without -fopenmp, so it does not link an OpenMP runtime of its own; look up the
// one libtorch loaded, so that the ICV set here is the one libtorch's parallel regions read.
set_num_threads_fn openmp_set_num_threads() {
#if AT_PARALLEL_OPENMP
  static const auto function =
      reinterpret_cast<set_num_threads_fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return function;
#else
  return nullptr;
#endif
}

}  // namespace

void set_intra_op_threads(int threads) {
  TANDEM_EXPECTS(threads >= 1, config_error,
                 "intra-op threads must be at least 1, got " + std::to_string(threads) +
                     "; give each job 1 or more threads");
  const set_num_threads_fn set_for_this_thread = openmp_set_num_threads();
  TANDEM_EXPECTS(set_for_this_thread != nullptr, usage_error,
                 "per-job intra-op threads need libtorch's OpenMP backend, which this libtorch "
                 "lacks (" +
                     parallel_backend_info() + "); use a libtorch built with OpenMP");
  // The thread's lazy init re-applies the process-wide count of the last at::set_num_threads
  // (any thread's) and runs once per thread: run it now, so that nothing overrides what follows.
  // In libtorch 2.x that function is inline with a thread_local flag per shared object, so the
  // copy inside libtorch has its own flag: at::get_num_threads (compiled in libtorch) runs that
  // one.
  at::internal::lazy_init_num_threads();
  static_cast<void>(at::get_num_threads());
  // This thread's ICV only. at::set_num_threads would also rewrite the process-wide count (which
  // threads not yet initialised pick up) and resize the shared pthreadpool.
  set_for_this_thread(threads);
}

int measure_intra_op_threads() {
  // An at::parallel_for instantiated here would run serially: without -fopenmp ParallelOpenMP.h
  // leaves INTRA_OP_PARALLEL undefined. TensorIterator::for_each runs libtorch's own, OpenMP-built
  // at::parallel_for and calls the loop below from its workers.
  const std::int64_t indices = std::max<std::int64_t>(64, 8 * std::int64_t{at::get_num_threads()});
  const at::Tensor scratch = at::empty({indices}, at::kByte);
  at::TensorIterator iteration = at::TensorIteratorConfig()
                                     .add_output(scratch)
                                     .resize_outputs(false)
                                     .check_all_same_dtype(false)
                                     .build();
  std::mutex mutex;
  std::set<int> workers;
  iteration.for_each(
      [&](char**, const std::int64_t*, std::int64_t size0, std::int64_t size1) {
        // Work per index, so that no worker can drain the others' chunks before they start (a
        // work-sharing backend would allow it; OpenMP's static split gives each its own anyway).
        std::this_thread::sleep_for(std::chrono::microseconds(20) * (size0 * size1));
        const std::lock_guard lock(mutex);
        workers.insert(at::get_thread_num());
      },
      /*grain_size=*/1);
  return static_cast<int>(workers.size());
}

std::string parallel_backend_info() {
  std::istringstream report(at::get_parallel_info());
  std::string summary;
  for (std::string line; std::getline(report, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") + 1 - first);
    if (line.back() == ':') continue;  // section headings: "ATen/Parallel:", "Environment ..."
    if (const auto separator = line.find(" : "); separator != std::string::npos) {
      line.replace(separator, 3, "=");
    }
    summary += (summary.empty() ? "" : "; ") + line;
  }
  return summary;
}

}  // namespace tandem::torch_support
