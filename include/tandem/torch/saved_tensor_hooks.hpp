#pragma once
// C++ hooks on every tensor autograd saves for the backward pass, on stock libtorch.
//
// PyTorch's default saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks) are Python
// only. The C++ route: autograd asks its default Engine for the hooks of every tensor it saves
// (Engine::get_default_saved_variable_hooks), and the default Engine can be replaced with
// torch::autograd::set_default_engine_stub. tandem installs an Engine subclass, once per process,
// that asks the calling thread's saved_tensor_handler for hooks and otherwise behaves exactly as
// libtorch's (no handler: no hooks, the plain path). A job's thread sets a handler while it
// trains, so model code stays free of tandem calls. Footprint recording and the swap executor
// are handlers. Verified on libtorch 1.13; the same API exists in 2.x.

#include <torch/csrc/autograd/saved_variable_hooks.h>

#include <memory>

namespace tandem::torch_support {

/// Decides what happens to the tensors autograd saves on a thread.
class saved_tensor_handler {
 public:
  virtual ~saved_tensor_handler() = default;
  /// Hooks for the next tensor autograd saves on this thread (called in the forward pass, on the
  /// thread that runs it); nullptr keeps the tensor as autograd would.
  [[nodiscard]] virtual std::unique_ptr<torch::autograd::SavedVariableHooks> hooks_for_saved() = 0;
};

/// Replaces libtorch's default autograd Engine with tandem's, once; later calls do nothing.
/// Safe to call from any thread.
void install_saved_tensor_engine();

/// While it lives, tensors autograd saves on the calling thread go through `handler` (installs
/// the engine if needed). Restores the previous handler when destroyed, so scopes nest.
class saved_tensor_scope {
 public:
  explicit saved_tensor_scope(saved_tensor_handler& handler);
  ~saved_tensor_scope();
  saved_tensor_scope(const saved_tensor_scope&) = delete;
  saved_tensor_scope& operator=(const saved_tensor_scope&) = delete;

 private:
  saved_tensor_handler* previous_;
};

}  // namespace tandem::torch_support
