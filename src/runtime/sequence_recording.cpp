#include "sequence_recording.hpp"

#include <utility>

namespace tandem::runtime::detail {

namespace {

using footprint::tensor_role;

/// The optimizer's state of parameter `p` (libtorch keys it by the parameter's TensorImpl).
const torch::optim::OptimizerParamState* state_of(const torch::optim::Optimizer& optimizer,
                                                  const torch::Tensor& p) {
  const auto& state = optimizer.state();
  const auto found = state.find(c10::guts::to_string(p.unsafeGetTensorImpl()));
  return found == state.end() ? nullptr : found->second.get();
}

}  // namespace

sequence_recording::sequence_recording(memory::device_pool& pool, memory_monitor& monitor,
                                       memory::job_id job)
    : monitor_(monitor), job_(job), recorder_(pool, job) {
  monitor_.attach(job_, &recorder_);
}

sequence_recording::~sequence_recording() {
  monitor_.detach(job_);
}

void sequence_recording::begin(torch::nn::Module& module,
                               const torch::optim::Optimizer& optimizer) {
  for (const auto& p : module.named_parameters()) {
    recorder_.name_persistent(p.value(), p.key(), tensor_role::parameter);
    const auto* state = state_of(optimizer, p.value());
    if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(state)) {
      recorder_.name_persistent(sgd->momentum_buffer(), p.key() + ".momentum_buffer",
                                tensor_role::optimizer_state);
    } else if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(state)) {
      recorder_.name_persistent(adam->exp_avg(), p.key() + ".exp_avg",
                                tensor_role::optimizer_state);
      recorder_.name_persistent(adam->exp_avg_sq(), p.key() + ".exp_avg_sq",
                                tensor_role::optimizer_state);
      recorder_.name_persistent(adam->max_exp_avg_sq(), p.key() + ".max_exp_avg_sq",
                                tensor_role::optimizer_state);
    }
  }
  for (const auto& b : module.named_buffers()) {
    recorder_.name_persistent(b.value(), b.key(), tensor_role::parameter);
  }
  recorder_.begin();
}

footprint::access_sequence sequence_recording::end(std::string model, std::int64_t batch_size) {
  return recorder_.end(std::move(model), batch_size);
}

}  // namespace tandem::runtime::detail
