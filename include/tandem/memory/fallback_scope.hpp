#pragma once
// Allocations whose caller copes with out of memory (a plan's swap-in needed now, whose reader
// can read the tensor where it lies, in host memory the device reaches): while a fallback_scope
// lives on a thread, a memory wait that would fail the allocation fails only it. The gate is
// told (memory::own_room::caller_falls_back), so that the job is not judged as failing and the
// others do not wait for its regions; nor does it restart an iteration for it.

namespace tandem::memory {

class fallback_scope {
 public:
  fallback_scope();
  ~fallback_scope();
  fallback_scope(const fallback_scope&) = delete;
  fallback_scope& operator=(const fallback_scope&) = delete;

  /// Whether one lives on the calling thread.
  [[nodiscard]] static bool here();

 private:
  bool before_;
};

}  // namespace tandem::memory
