#pragma once
// Marks the calling thread as inside one of tandem's RecordFunction callbacks (the passive
// swapper's and the plan executor's). libtorch logs and swallows what such a callback throws, so
// tandem keeps the exception and rethrows it where it can (an iteration's end); meanwhile the
// iteration runs on. An exception meant to cut the iteration short at once (a policy's restart)
// must therefore not be chosen there: the optimizer step could run before it surfaces.
// Header-only: the runtime's memory waits ask it without linking libtorch's callbacks.

#include "tandem/common/thread_flag_scope.hpp"

namespace tandem::torch_support {

struct operation_callback_tag;
using operation_callback_scope = thread_flag_scope<operation_callback_tag>;

}  // namespace tandem::torch_support
