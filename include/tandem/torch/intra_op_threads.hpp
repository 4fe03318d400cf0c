#pragma once
// Per-job intra-op thread counts. libtorch 1.13 (OpenMP backend) sizes each parallel region from
// the calling thread's OpenMP nthreads ICV, which is per thread; but at::set_num_threads also
// stores a process-wide count that every thread re-applies to itself on its first parallel op
// (at::internal::lazy_init_num_threads), so a job that set its count before that first op loses
// it to whichever job called at::set_num_threads last. set_intra_op_threads avoids both traps.
//
// Process-wide, whatever a job sets: the inter-op pool, BLAS threads, pthreadpool (XNNPACK).

#include <string>

namespace tandem::torch_support {

/// Makes the calling thread's libtorch parallel regions use exactly `threads` threads from now
/// on, whatever other threads set before or after. Call it on the job's thread before it trains.
/// Throws config_error for threads < 1, usage_error when libtorch's backend is not OpenMP.
void set_intra_op_threads(int threads);

/// How many distinct workers (at::get_thread_num()) ran one of libtorch's own parallel_for
/// regions on the calling thread: the count its kernels really get.
[[nodiscard]] int measure_intra_op_threads();

/// libtorch's parallel configuration (at::get_parallel_info()) on one line, for logs.
/// Initialises the calling thread's intra-op count as any first parallel op would.
[[nodiscard]] std::string parallel_backend_info();

}  // namespace tandem::torch_support
