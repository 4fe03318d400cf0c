#pragma once
// The operations tandem follows on a job's thread: aten operators and autograd nodes, with
// their inputs and outputs. The access recorder numbers operations by them and the plan
// executor and passive swapper act on them, so all three must see the same ones.

#include <ATen/record_function.h>

#include <exception>

#include "tandem/torch/operation_callback_scope.hpp"

namespace tandem::torch_support::detail {

/// Registers `start` and `end` for those operations on the calling thread; remove the handle
/// with at::removeCallback. `with_tensors`: whether they read the operations' inputs and
/// outputs, which libtorch then copies for every operation (most of what the callbacks cost a
/// job of many small operations: README, "Footprint planners on real jobs").
inline at::CallbackHandle add_operation_callbacks(at::RecordFunctionCallback::StartCallback start,
                                                  at::RecordFunctionCallback::EndCallback end,
                                                  bool with_tensors = true) {
  return at::addThreadLocalCallback(
      at::RecordFunctionCallback(start, end)
          .needsInputs(with_tensors)
          .needsOutputs(with_tensors)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

/// For a follower that acts on outermost operations only (the plan executor): `handle`'s
/// callbacks stop for the operators nested in the one under way, and start again when it ends.
/// libtorch keeps the callbacks an operation had when it began, so the outermost one's end
/// still arrives. Nested operators are about four in five of those a job runs (ResNet-20), and
/// each would cost a callback and, with tensors, a copy of its inputs and outputs.
inline void outermost_began(at::CallbackHandle handle) {
  at::disableCallback(handle);
}
inline void outermost_ended(at::CallbackHandle handle) {
  at::reenableCallback(handle);
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
