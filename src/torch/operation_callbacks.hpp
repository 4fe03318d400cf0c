#pragma once
// The operations tandem follows on a job's thread: aten operators and autograd nodes, with
// their inputs and outputs. The access recorder numbers operations by them and the plan
// executor and passive swapper act on them, so all three must see the same ones.

#include <ATen/record_function.h>

namespace tandem::torch_support::detail {

/// Registers `start` and `end` for those operations on the calling thread; remove the handle
/// with at::removeCallback.
inline at::CallbackHandle add_operation_callbacks(at::RecordFunctionCallback::StartCallback start,
                                                  at::RecordFunctionCallback::EndCallback end) {
  return at::addThreadLocalCallback(
      at::RecordFunctionCallback(start, end)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

}  // namespace tandem::torch_support::detail
