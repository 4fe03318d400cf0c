#pragma once
// Marks, on a job's own thread, the stretch of an iteration that the job can roll back to the
// iteration's start: a memory wait there may end with iteration_restarted (policy_gate.hpp)
// instead of failing the job when every running iteration waits for another
// (schedule/policy_driver.hpp, "Memory waits"). A training job marks its forward and backward
// passes; a user's loop marks what it chooses (api::iteration_scope::restartable, its forward
// pass); elsewhere (the model's build, an optimizer step that has changed some weights) nothing
// is marked and the wait is judged as one that cannot restart.

#include "tandem/common/thread_flag_scope.hpp"
#include "tandem/torch/operation_callback_scope.hpp"

namespace tandem::runtime {

struct restartable_tag;
using restartable_scope = thread_flag_scope<restartable_tag>;

/// Whether a wait on the calling thread may end in a restart: inside a restartable stretch and
/// not inside an operation callback, where the restart would surface only later, perhaps once
/// the optimizer step has changed weights (operation_callback_scope.hpp). Every wait asks this
/// one rule: for regions, at a group boundary, and an injected restart.
[[nodiscard]] inline bool may_restart_here() {
  return restartable_scope::here() && !torch_support::operation_callback_scope::here();
}

}  // namespace tandem::runtime
