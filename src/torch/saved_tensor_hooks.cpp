#include "tandem/torch/saved_tensor_hooks.hpp"

#include <torch/csrc/autograd/engine.h>

#include <mutex>

namespace tandem::torch_support {

namespace {

thread_local saved_tensor_handler* current_handler = nullptr;

/// The default engine before tandem's: libtorch's own, or in a Python process PyTorch's, whose
/// hooks are torch.autograd.graph.saved_tensors_hooks.
torch::autograd::Engine* previous_engine = nullptr;

/// libtorch's Engine in every respect but the hooks of saved tensors. Autograd holds the default
/// engine for the process's lifetime, so this one is never destroyed either.
class hooking_engine final : public torch::autograd::Engine {
 public:
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    if (current_handler != nullptr) return current_handler->hooks_for_saved();
    // Threads tandem does not watch keep the hooks they had (Python's, in a Python process).
    return previous_engine != nullptr ? previous_engine->get_default_saved_variable_hooks()
                                      : nullptr;
  }

  static torch::autograd::Engine& instance() {
    static auto* engine = new hooking_engine();  // leaked on purpose: see above
    return *engine;
  }
};

}  // namespace

void install_saved_tensor_engine() {
  static std::once_flag once;
  std::call_once(once, [] {
    previous_engine = &torch::autograd::Engine::get_default_engine();
    torch::autograd::set_default_engine_stub(&hooking_engine::instance);
  });
}

saved_tensor_scope::saved_tensor_scope(saved_tensor_handler& handler) : previous_(current_handler) {
  install_saved_tensor_engine();
  current_handler = &handler;
}

saved_tensor_scope::~saved_tensor_scope() {
  current_handler = previous_;
}

}  // namespace tandem::torch_support
