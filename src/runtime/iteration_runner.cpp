#include "iteration_runner.hpp"

#include <ATen/record_function.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/common/error.hpp"

namespace tandem::runtime::detail {

namespace {

/// RecordFunction::name() is a const char* in libtorch 1.13 and 2.x; this takes any string-like
/// result in case a release changes it.
template <typename Name>
std::string to_std_string(const Name& name) {
  return std::string(std::string_view(name));
}

/// The autograd engine wraps each backward node it runs as
/// "autograd::engine::evaluate_function: AddmmBackward0": the node names the operation.
std::string operation_name(std::string name) {
  constexpr std::string_view engine = "autograd::engine::evaluate_function: ";
  if (name.starts_with(engine)) name.erase(0, engine.size());
  return name;
}

}  // namespace

bool records_operations(const job_spec& spec, std::int64_t iteration,
                        const memory_monitor& monitor) {
  if (!monitor.records_allocations()) return false;
  if (!spec.iterations) return true;
  // An inference job's iteration 0 is its warm-up: request k is iteration k.
  const auto last = spec.kind == job_kind::inference ? *spec.iterations : *spec.iterations - 1;
  return iteration == last;
}

/// Records the top-level operations run on the thread that made it, while it lives: forward ops,
/// the autograd nodes of the backward pass (which libtorch runs on the calling thread for CPU
/// tensors), optimizer ops. Nested calls (aten::conv2d's aten::convolution...) are part of
/// their outer op. Its callback is installed only while it lives, so jobs that do not record
/// pay nothing.
class operation_recorder {
 public:
  operation_recorder() : origin_(clock::now()) {
    TANDEM_ASSERT(active_ == nullptr, "one operation recorder per thread at a time");
    active_ = this;
    operations_.reserve(1024);
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_start, &on_end)
            .needsInputs(false)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  }
  ~operation_recorder() {
    at::removeCallback(handle_);
    active_ = nullptr;
  }
  operation_recorder(const operation_recorder&) = delete;
  operation_recorder& operator=(const operation_recorder&) = delete;

  /// The operations so far, in order of start, times relative to the recorder's creation.
  [[nodiscard]] std::vector<operation_record> take() { return std::move(operations_); }

 private:
  using clock = std::chrono::steady_clock;

  [[nodiscard]] double now_s() const {
    return std::chrono::duration<double>(clock::now() - origin_).count();
  }

  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    // libtorch carries thread-local callbacks to the threads it hands work to (autograd device
    // threads, at::launch); those have no recorder, so only the job's own thread records.
    auto* self = active_;
    if (self != nullptr && self->depth_++ == 0) {
      self->current_.name = operation_name(to_std_string(fn.name()));
      self->current_.start_s = self->now_s();
    }
    return nullptr;
  }

  static void on_end(const at::RecordFunction& /*fn*/, at::ObserverContext* /*context*/) {
    auto* self = active_;
    if (self == nullptr || self->depth_ == 0) return;  // started before the recorder
    if (--self->depth_ == 0) {
      self->current_.duration_s = self->now_s() - self->current_.start_s;
      self->operations_.push_back(std::move(self->current_));
    }
  }

  static thread_local operation_recorder* active_;
  clock::time_point origin_;
  int depth_ = 0;  ///< operations open on this thread
  operation_record current_;
  std::vector<operation_record> operations_;
  at::CallbackHandle handle_ = at::INVALID_CALLBACK_HANDLE;
};

thread_local operation_recorder* operation_recorder::active_ = nullptr;

iteration_runner::iteration_runner(const job_spec& spec, memory::job_id id,
                                   training_context& context, memory::tensor_classifier* classifier,
                                   group_gate& groups, job_result& result)
    : spec_(spec),
      id_(id),
      context_(context),
      classifier_(classifier),
      groups_(groups),
      result_(result) {}

iteration_runner::~iteration_runner() = default;

iteration_record iteration_runner::record(const schedule::iteration_report& report,
                                          double requested_s, double loss) const {
  iteration_record out;
  out.start_s = report.start_s;
  out.end_s = report.end_s;
  out.loss = loss;
  out.peak_bytes = report.peak_bytes;
  out.requested_s = requested_s;
  out.memory_wait_s = context_.gate.memory_waited_s(id_) - memory_waited_at_begin_s_;
  out.group_wait_s = groups_.waited_s() - group_waited_at_begin_s_;
  return out;
}

void iteration_runner::begin(std::int64_t iteration) {
  memory_waited_at_begin_s_ = context_.gate.memory_waited_s(id_);
  group_waited_at_begin_s_ = groups_.waited_s();
  context_.monitor.restart_peak_window(id_);
  // Made right after the window starts: operation times share the allocations' origin (to a few
  // microseconds).
  recorder_.reset();
  if (records_operations(spec_, iteration, context_.monitor)) {
    recorder_ = std::make_unique<operation_recorder>();
  }
  // The first iteration is not shown to the classifier: it alone makes the optimizer's state
  // (and whatever libtorch builds lazily on a first pass), so its allocation sequence matches no
  // later one (learned from it, Adam's later temporaries would take the state's positions and
  // sizes, and be tagged persistent). The second learns; the later ones get the learned kinds.
  classified_ = classifier_ != nullptr && iteration > 0;
  if (classified_) classifier_->begin_iteration();
  groups_.begin_iteration();
}

schedule::iteration_report iteration_runner::end(double start_s) {
  auto operations = recorder_ ? recorder_->take() : std::vector<operation_record>{};
  recorder_.reset();
  if (classified_) classifier_->end_iteration();
  close_gating();
  auto measured = context_.monitor.restart_window(id_);
  schedule::iteration_report report{start_s,
                                    context_.gate.now(),
                                    measured.peak_live_bytes,
                                    std::move(measured.held),
                                    std::move(measured.memory),
                                    false};
  if (context_.monitor.records_allocations()) {
    result_.last_iteration =
        iteration_detail{std::move(measured.allocations), report.held, std::move(operations)};
  }
  return report;
}

schedule::iteration_report iteration_runner::abandon(double start_s) {
  recorder_.reset();
  // The classifier is left open: its next begin_iteration abandons this one.
  groups_.end_iteration();
  // Every region the cut iteration emptied goes back before the others hear of the restart.
  context_.pool.synchronize(id_);
  auto measured = context_.monitor.restart_window(id_);
  schedule::iteration_report report;
  report.start_s = start_s;
  report.end_s = context_.gate.now();
  report.peak_bytes = measured.peak_live_bytes;
  report.held = std::move(measured.held);
  report.restarted = true;
  return report;
}

void iteration_runner::stop_gating() {
  static_cast<void>(groups_.end_iteration());
}

void iteration_runner::close_gating() {
  // A gated job's last group ends here: its frees must reach the others as at every boundary.
  // Otherwise what is already complete is enough.
  if (groups_.end_iteration()) {
    context_.pool.synchronize(id_);
  } else {
    context_.pool.poll(id_);
  }
}

}  // namespace tandem::runtime::detail
