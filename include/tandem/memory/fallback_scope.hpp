#pragma once
// Allocations whose caller copes with out of memory (a plan's swap-in needed now, whose reader
// can read the tensor where it lies, in host memory the device reaches): while a fallback_scope
// lives on a thread, a memory wait that would fail the allocation fails only it. The gate is
// told (memory::own_room::caller_falls_back), so that the job is not judged as failing and the
// others do not wait for its regions; nor does it restart an iteration for it.

#include "tandem/common/thread_flag_scope.hpp"

namespace tandem::memory {

struct fallback_tag;
using fallback_scope = thread_flag_scope<fallback_tag>;

}  // namespace tandem::memory
