#pragma once
// Marks the calling thread as inside one of tandem's RecordFunction callbacks (the passive
// swapper's and the plan executor's). libtorch logs and swallows what such a callback throws, so
// tandem keeps the exception and rethrows it where it can (an iteration's end); meanwhile the
// iteration runs on. An exception meant to cut the iteration short at once (a policy's restart)
// must therefore not be chosen there: the optimizer step could run before it surfaces.
// Header-only: the runtime's memory waits ask it without linking libtorch's callbacks.

namespace tandem::torch_support {

class operation_callback_scope {
 public:
  operation_callback_scope() { ++depth_; }
  ~operation_callback_scope() { --depth_; }
  operation_callback_scope(const operation_callback_scope&) = delete;
  operation_callback_scope& operator=(const operation_callback_scope&) = delete;

  /// Whether the calling thread is inside such a callback now.
  [[nodiscard]] static bool here() { return depth_ > 0; }

 private:
  static inline thread_local int depth_ = 0;
};

}  // namespace tandem::torch_support
