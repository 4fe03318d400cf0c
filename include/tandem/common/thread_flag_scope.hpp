#pragma once
// A flag on the calling thread, set while a scope lives and put back as it was when the scope
// goes (scopes nest). Each Tag is its own flag: the memory pool's no-wait and fall-back
// allocations, the runtime's restartable stretch, tandem's operation callbacks. Header-only, so
// that code which only asks (a memory wait in the torch-free runtime) links nothing for it.

#include <utility>

namespace tandem {

template <class Tag>
class thread_flag_scope {
 public:
  thread_flag_scope() : before_(std::exchange(set_, true)) {}
  ~thread_flag_scope() { set_ = before_; }
  thread_flag_scope(const thread_flag_scope&) = delete;
  thread_flag_scope& operator=(const thread_flag_scope&) = delete;

  /// Whether one lives on the calling thread.
  [[nodiscard]] static bool here() { return set_; }

 private:
  static inline thread_local bool set_ = false;
  bool before_;
};

}  // namespace tandem
