#include "tandem/torch/job_binding.hpp"

#include "tandem/common/error.hpp"

namespace tandem::torch_support {

namespace {
thread_local binding current;
thread_local bool bound = false;
}  // namespace

const binding* current_binding() noexcept {
  return bound ? &current : nullptr;
}

job_binding::job_binding(memory::device_pool& pool, memory::job_id job, device::stream& stream,
                         memory::tensor_classifier* classifier, allocation_hook* hook)
    : previous_(current), had_previous_(bound) {
  (void)pool.stats(job);  // throws usage_error for a job the pool does not know
  current = binding{&pool, job, &stream, memory::alloc_kind::unknown, classifier, hook};
  bound = true;
}

job_binding::~job_binding() {
  current = previous_;
  bound = had_previous_;
}

kind_scope::kind_scope(memory::alloc_kind kind) : previous_(current.kind) {
  TANDEM_EXPECTS(bound, usage_error,
                 "kind_scope needs a job_binding on this thread; bind the thread to its job first");
  current.kind = kind;
}

kind_scope::~kind_scope() {
  current.kind = previous_;
}

}  // namespace tandem::torch_support
