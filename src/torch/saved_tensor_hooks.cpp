#include "tandem/torch/saved_tensor_hooks.hpp"

#include <torch/csrc/autograd/engine.h>

#include <mutex>

namespace tandem::torch_support {

namespace {

thread_local saved_tensor_handler* current_handler = nullptr;

/// libtorch's Engine in every respect but the hooks of saved tensors. Autograd holds the default
/// engine for the process's lifetime, so this one is never destroyed either.
class hooking_engine final : public torch::autograd::Engine {
 public:
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    return current_handler != nullptr ? current_handler->hooks_for_saved() : nullptr;
  }

  static torch::autograd::Engine& instance() {
    static auto* engine = new hooking_engine();  // leaked on purpose: see above
    return *engine;
  }
};

}  // namespace

void install_saved_tensor_engine() {
  static std::once_flag once;
  std::call_once(once, [] { torch::autograd::set_default_engine_stub(&hooking_engine::instance); });
}

saved_tensor_scope::saved_tensor_scope(saved_tensor_handler& handler) : previous_(current_handler) {
  install_saved_tensor_engine();
  current_handler = &handler;
}

saved_tensor_scope::~saved_tensor_scope() {
  current_handler = previous_;
}

}  // namespace tandem::torch_support
