#pragma once
// Allocations that may be put off (a plan's prefetch, which its tensor's reader would bring
// back anyway): while a no_wait_scope lives on a thread, the pool serves that thread's
// allocations only from what is free now. It asks no pressure relief and waits on no gate;
// one that finds nothing fails at once with out_of_memory_error, and is not counted as the
// job's out-of-memory failure (no stats, no trace event): the caller tries again later.

#include "tandem/common/thread_flag_scope.hpp"

namespace tandem::memory {

struct no_wait_tag;
using no_wait_scope = thread_flag_scope<no_wait_tag>;

}  // namespace tandem::memory
