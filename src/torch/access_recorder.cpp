#include "tandem/torch/access_recorder.hpp"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <algorithm>
#include <utility>

#include "for_each_tensor.hpp"
#include "operation_callbacks.hpp"
#include "tandem/common/error.hpp"

namespace tandem::torch_support {

namespace {

thread_local access_recorder* recording = nullptr;

void read_tensor(access_recorder& recorder, const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.has_storage()) return;
  recorder.read(tensor.storage().unsafeGetStorageImpl());
}

void read_all(access_recorder& recorder, const c10::IValue& value) {
  detail::for_each_tensor(value, [&](const at::Tensor& tensor) { read_tensor(recorder, tensor); });
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (recording == nullptr) return nullptr;
  recording->operation_started(fn);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* /*context*/) {
  if (recording != nullptr) recording->operation_ended(fn);
}

bool draws_random_numbers(std::string_view name) {
  for (const std::string_view part : {"dropout", "bernoulli", "rand", "normal", "uniform",
                                      "multinomial", "exponential", "geometric", "cauchy"}) {
    if (name.find(part) != std::string_view::npos) return true;
  }
  return false;
}

/// Keeps the saved tensor as autograd would, and reports its reads in the backward pass.
class reading_hooks final : public torch::autograd::SavedVariableHooks {
 public:
  void call_pack_hook(const at::Tensor& tensor) override {
    // Detached: an operation's own output comes with its grad_fn, the node owning these hooks;
    // holding it would be a cycle that a failed backward pass never breaks.
    saved_ = tensor.detach();
    if (recording != nullptr) recording->saved(tensor);
  }
  at::Tensor call_unpack_hook() override {
    if (recording != nullptr) read_tensor(*recording, saved_);
    return saved_;
  }

 private:
  at::Tensor saved_;
};

/// The role of a tensor the iteration made, from where it was made and read. `t.role` holds the
/// provisional one the trace gave: gradient when the pool classified the allocation as one.
footprint::tensor_role role_of(const footprint::tensor& t,
                               const footprint::access_sequence& sequence) {
  const auto made_in = sequence.operations[*t.created_by].where;
  bool read_later_phase = false;
  for (const auto op : t.read_by) read_later_phase |= sequence.operations[op].where != made_in;
  if (made_in == footprint::phase::forward && read_later_phase) {
    return footprint::tensor_role::activation;
  }
  if (made_in == footprint::phase::backward &&
      (read_later_phase || t.role == footprint::tensor_role::gradient)) {
    return footprint::tensor_role::gradient;
  }
  return footprint::tensor_role::temporary;
}

/// Calls `visit` with the storage of every tensor `fn` writes (its schema's mutable arguments).
template <typename Visit>
void for_each_written(const at::RecordFunction& fn, Visit&& visit) {
  const auto schema = fn.operator_schema();
  if (!schema) return;
  const auto inputs = fn.inputs();
  const auto& arguments = schema->arguments();
  for (std::size_t i = 0; i < arguments.size() && i < inputs.size(); ++i) {
    const auto* alias = arguments[i].alias_info();
    if (alias == nullptr || !alias->isWrite() || !inputs[i].isTensor()) continue;
    const auto& tensor = inputs[i].toTensor();
    if (!tensor.defined() || !tensor.has_storage()) continue;
    visit(static_cast<const void*>(tensor.storage().data_ptr().get()));
  }
}

footprint::op_kind kind_of(std::string_view name) {
  const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (has("onvolution") || has("conv")) return footprint::op_kind::convolution;
  if (has("mm") || has("linear") || has("Mm") || has("addmm") || has("lstm") || has("Lstm"))
    return footprint::op_kind::matmul;
  if (has("norm") || has("Norm")) return footprint::op_kind::normalization;
  if (has("pool") || has("Pool")) return footprint::op_kind::pooling;
  if (has("relu") || has("Relu") || has("add") || has("Add") || has("mul") || has("Mul") ||
      has("dropout") || has("Dropout") || has("sigmoid") || has("tanh") || has("gelu") ||
      has("Gelu") || has("cat") || has("Cat"))
    return footprint::op_kind::elementwise;
  return footprint::op_kind::other;
}

}  // namespace

access_recorder::access_recorder(memory::device_pool& pool, memory::job_id job,
                                 memory::trace_sink* next)
    : pool_(pool), job_(job), next_(next) {}

access_recorder::~access_recorder() {
  if (recording == this) recording = nullptr;
  if (callback_handle_ != 0) at::removeCallback(callback_handle_);
}

void access_recorder::name_persistent(const at::Tensor& tensor, std::string name,
                                      footprint::tensor_role role) {
  if (!tensor.defined() || !tensor.has_storage()) return;
  names_[tensor.storage().unsafeGetStorageImpl()] = {std::move(name), role};
}

void access_recorder::begin() {
  TANDEM_EXPECTS(!recording_, usage_error, "access_recorder::begin called twice without end");
  TANDEM_EXPECTS(recording == nullptr, usage_error,
                 "another access_recorder is recording on this thread");
  sequence_ = {};
  live_.clear();
  persistent_.clear();
  storages_.clear();
  parked_.clear();
  moving_ = 0;
  moved_s_ = 0;
  kept_gradients_.clear();
  created_between_.clear();
  allocations_ = 0;
  made_in_op_.clear();
  saved_in_op_.clear();
  since_op_began_.clear();
  depth_ = 0;
  phase_ = footprint::phase::forward;
  phases_marked_ = false;
  live_at_begin_ = pool_.stats(job_).live_bytes;
  freed_from_before_ = 0;
  began_ = clock::now();
  recording_ = true;
  recording = this;
  callback_handle_ = detail::add_operation_callbacks(&on_start, &on_end);
  saved_scope_ = std::make_unique<saved_tensor_scope>(*this);
}

void access_recorder::enter(footprint::phase phase) {
  phase_ = phase;
  phases_marked_ = true;
}

double access_recorder::seconds_since_begin() const {
  return std::chrono::duration<double>(clock::now() - began_).count() - moved_s_;
}

void access_recorder::operation_started(const at::RecordFunction& fn) {
  const std::string_view name = fn.name();
  if (++depth_ > 1) {
    // A nested operator: part of the outermost one, whose rerun it would repeat.
    auto& op = sequence_.operations.back();
    op.random = op.random || draws_random_numbers(name);
    if (op.recomputable && writes_memory_made_before(fn)) op.recomputable = false;
    stop_recomputing_what_it_writes(fn);
    for (const auto& input : fn.inputs()) read_all(*this, input);
    return;
  }
  // libtorch's engine wraps each node it runs in "autograd::engine::evaluate_function: ...", of
  // scope FUNCTION in 1.13; the node itself is of scope BACKWARD_FUNCTION.
  const bool backward_node = fn.scope() == at::RecordScope::BACKWARD_FUNCTION ||
                             name.starts_with("autograd::engine::evaluate_function");
  if (!phases_marked_) {
    // A loop that marks no phases (a user's own): its backward pass begins with the first
    // autograd node, its optimizer step with the first operator it runs after that pass.
    if (backward_node && phase_ == footprint::phase::forward) phase_ = footprint::phase::backward;
    if (!backward_node && phase_ == footprint::phase::backward)
      phase_ = footprint::phase::optimizer;
  }
  footprint::operation op;
  op.name = std::string(name);
  // Autograd nodes are the backward pass whatever the loop said; operators the loop runs after
  // backward (the optimizer step) take the loop's phase.
  op.where = backward_node ? footprint::phase::backward : phase_;
  op.kind = phase_ == footprint::phase::optimizer ? footprint::op_kind::optimizer : kind_of(name);
  op.random = draws_random_numbers(name);
  // Only forward operators are run again; one that made tensors before it began (between
  // operations) could not make them again.
  op.recomputable = op.where == footprint::phase::forward && !backward_node &&
                    fn.operator_name().has_value() && created_between_.empty();
  op.start_s = seconds_since_begin();
  measure_scratch_of_last_operation(sequence_);
  sequence_.operations.push_back(std::move(op));
  const auto index = sequence_.operations.size() - 1;
  for (const auto t : created_between_) {
    sequence_.tensors[t].created_by = index;
    since_op_began_.emplace_back(t, true);
  }
  created_between_.clear();
  made_in_op_.clear();
  saved_in_op_.clear();
  auto& started = sequence_.operations.back();
  if (started.recomputable && writes_memory_made_before(fn)) started.recomputable = false;
  stop_recomputing_what_it_writes(fn);
  for (const auto& input : fn.inputs()) read_all(*this, input);
}

bool access_recorder::writes_memory_made_before(const at::RecordFunction& fn) const {
  // Batch norm updates its running statistics in place, yet libtorch 1.13's schemas
  // (native_batch_norm's, batch_norm's) do not mark them mutable: known by name.
  const std::string_view name = fn.name();
  if (name.find("batch_norm") != std::string_view::npos ||
      name.find("instance_norm") != std::string_view::npos)
    return true;
  bool writes = false;
  for_each_written(fn, [&](const void* data) {
    const bool made_by_this_op =
        std::any_of(made_in_op_.begin(), made_in_op_.end(), [&](const auto& made) {
          return pool_.owns(data) &&
                 made.first ==
                     static_cast<std::size_t>(static_cast<const std::byte*>(data) - pool_.base());
        });
    writes = writes || !made_by_this_op;
  });
  return writes;
}

void access_recorder::stop_recomputing_what_it_writes(const at::RecordFunction& fn) {
  const auto current = sequence_.operations.size() - 1;
  for_each_written(fn, [&](const void* data) {
    if (data == nullptr || !pool_.owns(data)) return;
    const auto found =
        live_.find(static_cast<std::size_t>(static_cast<const std::byte*>(data) - pool_.base()));
    if (found == live_.end()) return;
    const auto creator = sequence_.tensors[found->second].created_by;
    // Written after the operation that made it (the C++ frontend's linear adds its bias in
    // place to what matmul made): a rerun of that operation would make it without the write.
    if (creator && *creator != current) sequence_.operations[*creator].recomputable = false;
  });
}

void access_recorder::measure_scratch_of_last_operation(footprint::access_sequence& sequence) {
  if (sequence.operations.empty()) return;
  const auto op = sequence.operations.size() - 1;
  // The most its scratch held at once, and the most of everything it made (its outputs too,
  // as they came): the cost model holds the outputs from the operation's start, so the scratch
  // it counts beside them is what the operation rose to above them. A convolution's backward
  // node frees its scratch before it makes its outputs: counting both at once overstated
  // ResNet-20's peak.
  std::size_t held = 0;
  std::size_t most = 0;
  std::size_t made = 0;
  std::size_t most_made = 0;
  std::size_t outputs = 0;
  for (const auto& [t, allocated] : since_op_began_) {
    const auto& x = sequence.tensors[t];
    if (x.created_by != op) continue;
    if (allocated) {
      made += x.bytes;
      most_made = std::max(most_made, made);
    } else {
      made -= std::min(made, x.bytes);
    }
    // Freed by now (a tensor still alive may yet be read), and scratch by the sequence's rule.
    if (x.freed_after != op || !sequence.is_scratch(t)) {
      if (allocated) outputs += x.bytes;
      continue;
    }
    if (allocated) {
      held += x.bytes;
      most = std::max(most, held);
    } else {
      held -= std::min(held, x.bytes);
    }
  }
  sequence.operations[op].scratch_peak_bytes =
      std::min(most, most_made - std::min(most_made, outputs));
  since_op_began_.clear();
}

void access_recorder::operation_ended(const at::RecordFunction& fn) {
  if (depth_ == 0) return;  // began before recording did
  if (--depth_ > 0) return;
  auto& op = sequence_.operations.back();
  op.duration_s = seconds_since_begin() - op.start_s;
  if (!op.recomputable) return;
  // What outlives the operation must be an output or saved by autograd: a rerun hands back
  // exactly those (plan_executor.cpp), so anything else could not be rebuilt.
  std::vector<const void*> kept = saved_in_op_;
  for (const auto& output : fn.outputs()) {
    if (output.isTensor() && output.toTensor().defined() && output.toTensor().has_storage())
      kept.push_back(output.toTensor().storage().data_ptr().get());
  }
  for (const auto& [offset, t] : made_in_op_) {
    const auto live = live_.find(offset);
    if (live == live_.end() || live->second != t) continue;  // freed within the operation
    if (std::find(kept.begin(), kept.end(), pool_.base() + offset) == kept.end()) {
      op.recomputable = false;
      return;
    }
  }
}

void access_recorder::saved(const at::Tensor& tensor) {
  if (recording_ && depth_ > 0 && tensor.defined() && tensor.has_storage())
    saved_in_op_.push_back(tensor.storage().data_ptr().get());
}

void access_recorder::read(const c10::StorageImpl* storage) {
  if (!recording_ || storage == nullptr || sequence_.operations.empty()) return;
  const void* data = storage->data_ptr().get();
  std::optional<std::size_t> tensor;
  if (const auto parked = parked_.find(storage); parked != parked_.end()) {
    tensor = parked->second;  // out of the pool for now: read all the same
  } else if (data == nullptr || !pool_.owns(data)) {
    return;
  } else if (const auto found = live_.find(
                 static_cast<std::size_t>(static_cast<const std::byte*>(data) - pool_.base()));
             found != live_.end()) {
    tensor = found->second;
  } else if (const auto persistent = persistent_.find(storage); persistent != persistent_.end()) {
    tensor = persistent->second;
  } else {
    tensor = persistent_tensor(storage);
  }
  auto& t = sequence_.tensors[*tensor];
  const auto op = sequence_.operations.size() - 1;
  // The creating operation's own nested operators read what it made: not a later access.
  if (t.created_by == op) return;
  if (t.read_by.empty() || t.read_by.back() != op) t.read_by.push_back(op);
}

std::size_t access_recorder::persistent_tensor(const c10::StorageImpl* storage) {
  footprint::tensor t;
  t.bytes = storage->nbytes();
  if (const auto found = names_.find(storage); found != names_.end()) {
    t.name = found->second.name;
    t.role = found->second.role;
  } else {
    // Read first by the optimizer: its state; in the backward pass: a gradient kept between
    // iterations; else a parameter or buffer.
    t.name = "persistent" + std::to_string(persistent_.size());
    t.role = phase_ == footprint::phase::optimizer  ? footprint::tensor_role::optimizer_state
             : phase_ == footprint::phase::backward ? footprint::tensor_role::gradient
                                                    : footprint::tensor_role::parameter;
  }
  // A gradient kept between iterations is zeroed or overwritten in each: modelled as made by the
  // operation that touches it first and held to the end (as the catalogue's sequences do).
  if (t.role == footprint::tensor_role::gradient) {
    t.created_by = sequence_.operations.size() - 1;
    kept_gradients_.push_back(sequence_.tensors.size());
  } else {
    // Alive now (an operation reads it): a handle that outlives the raw pointer's certainty.
    storages_.emplace(sequence_.tensors.size(), c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(
                                                    const_cast<c10::StorageImpl*>(storage)));
  }
  sequence_.tensors.push_back(std::move(t));
  persistent_.emplace(storage, sequence_.tensors.size() - 1);
  return sequence_.tensors.size() - 1;
}

void access_recorder::moving() {
  ++moving_;
}

void access_recorder::moved(const c10::StorageImpl* storage, std::optional<std::size_t> from,
                            std::optional<std::size_t> to, double seconds) {
  if (moving_ > 0 && --moving_ == 0)
    moved_s_ += seconds;  // a nested move's time is in its caller's
  if (!recording_) return;
  if (from) {
    if (const auto found = live_.find(*from); found != live_.end()) {
      parked_[storage] = found->second;
      live_.erase(found);
    }
  }
  if (to) {
    if (const auto found = parked_.find(storage); found != parked_.end()) {
      live_[*to] = found->second;
      parked_.erase(found);
    }
  }
}

void access_recorder::freed_while_out(const c10::StorageImpl* storage) {
  const auto found = parked_.find(storage);
  if (found == parked_.end()) return;
  if (recording_ && !sequence_.operations.empty())
    sequence_.tensors[found->second].freed_after = sequence_.operations.size() - 1;
  parked_.erase(found);
}

void access_recorder::on_event(const memory::trace_event& event) {
  if (next_ != nullptr) next_->on_event(event);
  if (!recording_ || event.job != job_ || recording != this || moving_ > 0) return;
  if (event.op == memory::trace_op::alloc) {
    footprint::tensor t;
    t.name = "t" + std::to_string(sequence_.tensors.size());
    t.bytes = event.bytes;
    t.allocation = allocations_++;
    t.role = event.kind == memory::alloc_kind::gradient ? footprint::tensor_role::gradient
                                                        : footprint::tensor_role::temporary;
    sequence_.tensors.push_back(std::move(t));
    const auto index = sequence_.tensors.size() - 1;
    live_[event.offset] = index;
    if (depth_ > 0) {
      since_op_began_.emplace_back(index, true);
      sequence_.tensors[index].created_by = sequence_.operations.size() - 1;
      made_in_op_.emplace_back(event.offset, index);
    } else {
      created_between_.push_back(index);
    }
  } else if (event.op == memory::trace_op::free) {
    const auto found = live_.find(event.offset);
    if (found == live_.end()) {  // allocated before the iteration
      freed_from_before_ += event.bytes;
      return;
    }
    if (!sequence_.operations.empty()) {
      sequence_.tensors[found->second].freed_after = sequence_.operations.size() - 1;
      since_op_began_.emplace_back(found->second, false);
    }
    live_.erase(found);
  }
}

std::unique_ptr<torch::autograd::SavedVariableHooks> access_recorder::hooks_for_saved() {
  return std::make_unique<reading_hooks>();
}

footprint::access_sequence access_recorder::end(std::string model, std::int64_t batch_size) {
  TANDEM_EXPECTS(recording_, usage_error, "access_recorder::end without begin");
  saved_scope_.reset();
  at::removeCallback(callback_handle_);
  callback_handle_ = 0;
  recording_ = false;
  recording = nullptr;
  auto sequence = std::move(sequence_);
  sequence.model = std::move(model);
  sequence.batch_size = batch_size;
  const auto last = sequence.operations.empty() ? 0 : sequence.operations.size() - 1;
  // Still held at the end (the loss, gradients kept for the next iteration): held to the end.
  for (const auto& [offset, tensor] : live_) sequence.tensors[tensor].freed_after = last;
  for (const auto& [storage, tensor] : parked_) sequence.tensors[tensor].freed_after = last;
  parked_.clear();
  std::vector<bool> kept(sequence.tensors.size(), false);
  for (const auto tensor : kept_gradients_) {
    sequence.tensors[tensor].freed_after = last;
    kept[tensor] = true;
  }
  live_.clear();
  kept_gradients_.clear();
  // Made outside every operation after the last one (nothing reads them): by the last.
  for (const auto t : created_between_) sequence.tensors[t].created_by = last;
  created_between_.clear();
  measure_scratch_of_last_operation(sequence);
  // Held from before the iteration and never read: held throughout, as far as the plans go.
  std::size_t read_from_before = 0;
  for (const auto& [storage, tensor] : persistent_)
    read_from_before += sequence.tensors[tensor].bytes;
  const auto kept_from_before = live_at_begin_ - std::min(live_at_begin_, freed_from_before_);
  sequence.other_bytes = kept_from_before - std::min(kept_from_before, read_from_before);
  for (std::size_t i = 0; i < sequence.tensors.size(); ++i) {
    auto& t = sequence.tensors[i];
    if (t.created_by && !kept[i]) t.role = role_of(t, sequence);
  }
  return sequence;
}

}  // namespace tandem::torch_support
