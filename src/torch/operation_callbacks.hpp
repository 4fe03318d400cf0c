#pragma once
// The operations tandem follows on a job's thread: aten operators and autograd nodes, with
// their inputs and outputs. The access recorder numbers operations by them and the plan
// executor and passive swapper act on them, so all three must see the same ones.

#include <ATen/record_function.h>

#include <exception>

#include "tandem/torch/operation_callback_scope.hpp"

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

/// Runs `act`, the work of one of those callbacks. libtorch logs and swallows what a callback
/// throws, so the first failure is kept in `failure` for a place that can throw (end() of an
/// iteration); returns false when `act` threw. While it runs, operation_callback_scope::here().
template <class Act>
bool keeping_failure(std::exception_ptr& failure, Act&& act) noexcept {
  try {
    const operation_callback_scope inside;
    act();
    return true;
  } catch (...) {
    if (!failure) failure = std::current_exception();
    return false;
  }
}

}  // namespace tandem::torch_support::detail
