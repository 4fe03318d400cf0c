#include "tandem/api/runtime.hpp"

#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "../runtime/buffer_snapshot.hpp"
#include "../runtime/footprint_iteration.hpp"
#include "../runtime/group_gate.hpp"
#include "../runtime/iteration_runner.hpp"
#include "../runtime/job_device.hpp"
#include "../runtime/planned_training.hpp"
#include "../runtime/sequence_recording.hpp"
#include "../runtime/shared_device.hpp"
#include "../runtime/training_job.hpp"
#include "tandem/common/units.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/memory/pool_options.hpp"
#include "tandem/memory/tensor_classifier.hpp"
#include "tandem/runtime/footprint_budget.hpp"
#include "tandem/runtime/session.hpp"
#include "tandem/runtime/workload_limits.hpp"
#include "tandem/runtime/workload_validation.hpp"
#include "tandem/torch/job_binding.hpp"
#include "tandem/torch/passive_swapper.hpp"

namespace tandem::api {

namespace {

using memory::alloc_kind;

constexpr const char* options_source = "tandem runtime options";

/// `text` as a TOML basic string.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + '"';
}

/// `text` as a size in bytes, above 0; config_error naming `option` otherwise.
std::size_t positive_size(const std::string& text, const char* option) {
  std::size_t bytes = 0;
  try {
    bytes = parse_bytes(text);
  } catch (const config_error& e) {
    throw config_error(std::string("runtime options: ") + option + ": " + e.what());
  }
  TANDEM_EXPECTS(
      bytes > 0, config_error,
      std::string("runtime options: ") + option + " must be greater than 0, not \"" + text + "\"");
  return bytes;
}

/// The device option's kind, checked here so that the message speaks of the option, not of a
/// workload's [device] kind: "cuda" needs a build against a CUDA libtorch.
void check_device_kind(const std::string& kind, const std::string& device) {
#if !defined(TANDEM_HAVE_TORCH_CUDA)
  TANDEM_EXPECTS(kind != "cuda", config_error,
                 "runtime options: device \"" + device +
                     "\": this build trains on the CPU backend only (its libtorch has no CUDA); "
                     "use device = \"cpu\", or build tandem against a CUDA libtorch "
                     "(scripts/gpu-check.sh shows how)");
#else
  static_cast<void>(kind);
  static_cast<void>(device);
#endif
}

/// Checks the device and the policy as the policy will be made: told of `expected_jobs` jobs,
/// which a workload tells by its [[job]] tables (static sizes its partitions by them).
void validate_for_expected_jobs(const tandem::runtime::workload& spec, std::size_t expected_jobs) {
  auto sized = spec;
  sized.jobs.resize(expected_jobs);
  tandem::runtime::validate_device_and_policy(sized, {});
}

/// The options as a workload's [device] and [policy] tables, read by the workload's own code so
/// that the keys mean what they mean there. Messages name the option, not a line of this text.
tandem::runtime::workload workload_of(const runtime_options& options) {
  TANDEM_EXPECTS(!options.budget.empty(), config_error,
                 "runtime options: budget is required, e.g. budget = \"1GiB\"");
  // Checked here, so that a bad budget is not blamed on the capacity it defaults.
  const std::size_t budget = positive_size(options.budget, "budget");
  if (!options.capacity.empty()) static_cast<void>(positive_size(options.capacity, "capacity"));
  // A defaulted capacity holds the budget in whole regions (the pool rounds it down to them).
  std::string capacity = options.capacity;
  if (capacity.empty()) {
    std::size_t region = memory::pool_options{}.region_size;
    try {
      if (!options.region_size.empty()) region = parse_bytes(options.region_size);
    } catch (const config_error&) {
      // The region size's own check below says what is wrong with it.
    }
    capacity = std::to_string(is_power_of_two(region) ? align_up(budget, region) : budget);
  }
  // "cuda:N" as kind and index; anything else is the kind, which the workload's code judges.
  std::string kind = options.device;
  std::optional<std::string> index;
  if (const auto colon = kind.find(':'); colon != std::string::npos && kind.starts_with("cuda")) {
    index = kind.substr(colon + 1);
    kind = kind.substr(0, colon);
    TANDEM_EXPECTS(!index->empty() && index->size() <= 3 &&
                       index->find_first_not_of("0123456789") == std::string::npos,
                   config_error,
                   "runtime options: device \"" + options.device +
                       "\": name a CUDA device as \"cuda\" or \"cuda:N\" with N its ordinal");
  }
  check_device_kind(kind, options.device);
  std::ostringstream text;
  text << "[device]\nkind = " << quoted(kind) << "\ncapacity = " << quoted(capacity)
       << "\nbudget = " << quoted(options.budget) << '\n';
  if (index) text << "index = " << *index << '\n';
  // The CPU backend's option: on CUDA only written when set, for the workload's code to refuse.
  if (kind != "cuda" || options.copy_bandwidth != "auto") {
    text << "copy_bandwidth = " << quoted(options.copy_bandwidth) << '\n';
  }
  if (options.inflight_limit != 0) text << "inflight_limit = " << options.inflight_limit << '\n';
  if (!options.region_size.empty()) text << "region_size = " << quoted(options.region_size) << '\n';
  text << "[policy]\nname = " << quoted(options.policy) << '\n';
  for (const auto& [key, value] : options.policy_options) {
    std::ostringstream number;
    number.precision(17);
    number << value;
    auto written = number.str();
    if (written.find_first_of(".eE") == std::string::npos &&
        written.find("inf") == std::string::npos && written.find("nan") == std::string::npos) {
      written += ".0";  // a TOML float, which option tables read as a number like an integer
    }
    text << quoted(key) << " = " << written << '\n';
  }
  try {
    auto spec = tandem::runtime::parse_device_and_policy(text.str(), options_source,
                                                         tandem::runtime::training_vocabulary());
    validate_for_expected_jobs(spec, options.expected_jobs);
    return spec;
  } catch (const config_error& e) {
    // "SOURCE:LINE: message": the line is of the text above, which the caller never saw.
    std::string message = e.what();
    const std::string prefix = std::string(options_source) + ":";
    if (message.starts_with(prefix)) {
      const auto colon = message.find(": ", prefix.size());
      if (colon != std::string::npos) message = message.substr(colon + 2);
    }
    throw config_error("runtime options: " + message);
  }
}

/// Refuses a pool larger than the device can reserve (the CPU backend: this machine's physical
/// memory) now, in the options' terms, rather than as a failed reservation when it is built.
void check_reservable(const tandem::runtime::workload& spec, const runtime_options& options) {
  const auto& device = spec.device;
  const auto reservable = tandem::runtime::detail::make_training_backend(device, 0)->total_memory();
  if (device.capacity <= reservable) return;
  // A capacity left out is the budget's: name the option the user gave.
  const bool of_budget = options.capacity.empty();
  const std::string option = of_budget ? "budget" : "capacity";
  const std::string given = of_budget ? options.budget : options.capacity;
  const std::string machine =
      device.kind == device::backend_kind::cpu
          ? "this machine can reserve (" + format_bytes(reservable) + ", its physical memory)"
          : "CUDA device " + std::to_string(device.index) + " has (" + format_bytes(reservable) +
                ")";
  throw config_error("runtime options: " + option + " \"" + given + "\" (" +
                     format_bytes(device.capacity) + ") is more than " + machine +
                     "; use a smaller " + option);
}

}  // namespace

/// The device, and what every job that joined and left measured, in the order they joined.
struct runtime::shared {
  tandem::runtime::workload spec;
  std::unique_ptr<tandem::runtime::detail::shared_device> device;
  mutable std::mutex mutex;
  std::vector<std::string> names;                                   ///< every job that joined
  std::vector<std::int64_t> ids;                                    ///< their pool ids
  std::vector<std::optional<tandem::runtime::job_result>> results;  ///< once each left
  std::vector<std::thread::id> threads;                             ///< joined and not yet left
  /// Slots of joins that failed after taking one: no job, in no results.
  std::vector<bool> withdrawn;
  std::condition_variable departed;                   ///< a job left (close waits for them)
  std::optional<tandem::runtime::run_result> closed;  ///< the results, once the device is gone

  ~shared() { take_down(); }

  /// The slot of a job that joined and has not left, if any; `on_this_thread`: only the calling
  /// thread's. Needs `mutex`.
  [[nodiscard]] std::optional<std::size_t> joined_slot(bool on_this_thread) const {
    for (std::size_t j = 0; j < names.size(); ++j) {
      if (results[j] || withdrawn[j]) continue;
      if (!on_this_thread || threads[j] == std::this_thread::get_id()) return j;
    }
    return std::nullopt;
  }

  /// Returns once every job has left. After stop() the jobs of other threads are waited for:
  /// they leave at their next iteration. Otherwise, and for a job of the calling thread (which
  /// cannot leave while it waits here), usage_error.
  void await_departures(bool after_stop) {
    std::unique_lock lock(mutex);
    if (const auto own = joined_slot(true)) {
      throw usage_error("close: job '" + names[*own] +
                        "' of this thread has not left; leave it first");
    }
    for (auto slot = joined_slot(false); slot; slot = joined_slot(false)) {
      TANDEM_EXPECTS(after_stop, usage_error,
                     "close: job '" + names[*slot] +
                         "' has not left; leave every job first, or stop() the runtime so that "
                         "they leave at their next iteration");
      if (departed.wait_for(lock, std::chrono::seconds(10)) == std::cv_status::timeout) {
        std::fprintf(stderr,
                     "tandem: close: waiting for job '%s' to leave; it was stopped, and leaves "
                     "at its next iteration or when its thread lets go of it\n",
                     names[*slot].c_str());
      }
    }
  }

  /// Takes a slot for job `name` on `thread`; usage_error for a name taken or a thread that is
  /// a job already.
  std::size_t take_slot(const std::string& name, std::thread::id thread) {
    std::lock_guard lock(mutex);
    for (std::size_t j = 0; j < names.size(); ++j) {
      TANDEM_EXPECTS(names[j] != name, usage_error,
                     "join: a job named '" + name + "' already joined; give each job its own name");
      TANDEM_EXPECTS(threads[j] != thread, usage_error,
                     "join: this thread is already job '" + names[j] +
                         "'; leave it first, or join from another thread");
    }
    names.push_back(name);
    ids.push_back(-1);
    results.emplace_back();
    threads.push_back(thread);
    withdrawn.push_back(false);
    return names.size() - 1;
  }

  /// A join that failed after taking `slot`: the name is free again, and no job is reported.
  void withdraw(std::size_t slot) {
    std::lock_guard lock(mutex);
    names[slot].clear();
    results[slot].reset();
    threads[slot] = std::thread::id();
    withdrawn[slot] = true;
    departed.notify_all();
  }

  /// Destroys the device, or keeps its memory (leaked) while tensors made under it live.
  void take_down() {
    if (device == nullptr) return;
    if (const auto live = device->pool().stats().live_bytes; live != 0) {
      // Tensors the user still holds point into the pool's memory: keep it, so they stay valid.
      std::fprintf(stderr,
                   "tandem: %s of tensors made under the runtime outlived it; their memory is "
                   "kept (leaked) so that they stay valid; drop them before the runtime\n",
                   format_bytes(live).c_str());
      device->uninstall_allocator();
      static_cast<void>(device.release());
    }
    device.reset();
  }
};

struct job::state {
  std::shared_ptr<runtime::shared> owner;
  std::size_t slot = 0;  ///< in owner's lists
  tandem::runtime::job_spec spec;
  memory::job_id id = 0;
  std::thread::id thread;
  std::unique_ptr<device::stream> stream;
  memory::tensor_classifier classifier;
  std::optional<tandem::runtime::detail::group_gate> groups;
  std::unique_ptr<torch_support::job_binding> binding;
  /// The job's device and, on CUDA, its stream, current on the joined thread from join on.
  std::unique_ptr<tandem::runtime::detail::job_device> on_device;
  std::unique_ptr<c10::OptionalStreamGuard> on_stream;
  std::optional<tandem::runtime::detail::iteration_runner> runner;
  /// job_options::swap_passively, or a planner's (before the plan, and its fallback): made at
  /// join, running from an iteration's start to its end.
  std::unique_ptr<torch_support::passive_swapper> passive;
  /// job_options::planner: the plan made from iteration 1 and its executor. Before `passive`
  /// goes: it waits for the copies of an iteration cut short.
  std::unique_ptr<tandem::runtime::detail::planned_training> planned;
  /// The iteration a plan is made from, while it runs.
  std::unique_ptr<tandem::runtime::detail::sequence_recording> recording;
  /// What manages the footprint of the iteration under way.
  std::optional<tandem::runtime::detail::footprint_iteration> footprint;
  /// The default kind of what an iteration allocates; the classifier learns better ones.
  std::optional<torch_support::kind_scope> iteration_kind;
  tandem::runtime::job_result result;
  bool in_iteration = false;
  bool left = false;
  bool reported_loss = false;  ///< report_loss was called in any iteration
  double requested_s = 0;      ///< when the iteration under way asked the policy to start
  double start_s = 0;
  double loss = 0;
  /// The buffers of the model a restartable part named, saved at its start; written back when
  /// the iteration is cut short.
  std::optional<tandem::runtime::detail::buffer_snapshot> buffers;

  [[nodiscard]] tandem::runtime::detail::training_context& context() const {
    return owner->device->context();
  }

  /// Ends the job's life as the policy sees it (stopped or failed), so that nobody waits on it;
  /// it leaves the pool once the job itself goes, after the user's tensors, which it outlives.
  void stop_with(tandem::runtime::job_status status, const std::string& why) {
    result.status = status;
    result.error = why;
    runner.reset();
    context().gate.depart(id);
  }

  /// Starts what manages iteration `iteration`'s footprint, after the runner began it: a
  /// planned job's iteration 1 is recorded for its plan, its iterations from 4 on run under it.
  void begin_footprint(std::int64_t iteration) {
    using namespace tandem::runtime::detail;
    const auto stage = planned ? stage_of(iteration) : planned_stage::reference;
    if (stage == planned_stage::recorded) {
      recording = std::make_unique<sequence_recording>(context().pool, context().monitor, id);
    }
    footprint.emplace(footprint_parts{planned.get(), nullptr, passive.get()}, stage, 0,
                      recording ? &recording->recorder() : nullptr);
    footprint->begin();
    if (recording) recording->recorder().begin();  // phases inferred, tensors unnamed
  }

  /// Ends it once the iteration's code has run: returns what moved; plans a recorded iteration.
  tandem::runtime::plan_traffic end_footprint() {
    auto traffic = footprint->end();
    if (recording) {
      auto sequence = recording->end(spec.model, spec.batch_size);
      auto storages = recording->recorder().storages();
      recording.reset();
      planned->plan(sequence, std::move(storages));
      result.access_sequence = std::move(sequence);
    }
    return traffic;
  }

  /// The job's stream, its place in the pool and its device; undone if any part fails.
  void enter_pool(tandem::runtime::detail::shared_device& device) {
    auto& context = device.context();
    bool added = false;
    try {
      stream = context.backend.create_stream(spec.name, device::stream_kind::compute);
      id = device.pool().add_job(spec.name);
      added = true;
      on_device = tandem::runtime::detail::make_job_device(device.pool(), id, *stream,
                                                           context.inflight_limit);
    } catch (...) {
      if (added) static_cast<void>(device.pool().remove_job(id));
      throw;
    }
    device.monitor().name_job(id, spec.name);
    std::lock_guard lock(owner->mutex);
    owner->ids[slot] = static_cast<std::int64_t>(id);
  }

  /// Arrives at the policy and ties the joined thread's allocations to the job: its binding,
  /// its stream made current, its iterations' runner, and the swapper and plan it asked for.
  void start(tandem::runtime::detail::shared_device& device, bool swap_passively) {
    auto& context = device.context();
    result.arrival_s = device.gate().now();
    device.gate().arrive(tandem::runtime::job_info_of(spec, id, result.arrival_s));
    groups.emplace(device.gate(), device.pool(), id);
    binding = std::make_unique<torch_support::job_binding>(device.pool(), id, *stream, &classifier,
                                                           &*groups);
    on_stream = std::make_unique<c10::OptionalStreamGuard>(on_device->torch_stream());
    runner.emplace(spec, id, context, &classifier, *groups, result);
    if (swap_passively || spec.planner) {
      passive = std::make_unique<torch_support::passive_swapper>(device.pool(), id, context.copies);
    }
    if (spec.planner) {
      planned = std::make_unique<tandem::runtime::detail::planned_training>(
          *spec.planner, spec.plan_budget, context.copy_bandwidth, device.pool(), device.monitor(),
          context.copies, id, context.joint);
    }
  }

  void expect_own_thread(const char* what) const {
    TANDEM_EXPECTS(std::this_thread::get_id() == thread, usage_error,
                   "job '" + spec.name + "': " + what +
                       " from a thread other than the one that joined; a job's calls belong to "
                       "its thread (its tensors are tied to the job through it)");
  }
};

// ---- persistent_scope

persistent_scope::persistent_scope()
    : scope_(std::make_unique<torch_support::kind_scope>(alloc_kind::persistent)) {}

persistent_scope::~persistent_scope() = default;

persistent_scope::persistent_scope(persistent_scope&&) noexcept = default;

// ---- iteration_scope

iteration_scope::iteration_scope(job& owner)
    : job_(&owner), exceptions_(std::uncaught_exceptions()) {}

iteration_scope::iteration_scope(iteration_scope&& other) noexcept
    : job_(other.job_), exceptions_(other.exceptions_) {
  other.job_ = nullptr;
}

iteration_scope::~iteration_scope() {
  if (job_ == nullptr) return;
  std::optional<std::string> failure;
  if (std::uncaught_exceptions() > exceptions_) {
    failure = "an exception left iteration " + std::to_string(job_->iterations());
  }
  try {
    job_->end_iteration(failure);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: ending an iteration of job '%s': %s\n", job_->name().c_str(),
                 e.what());
  }
}

restartable_part iteration_scope::restartable(torch::nn::Module* model) {
  TANDEM_EXPECTS(job_ != nullptr, usage_error, "restartable on an iteration already ended");
  auto& s = *job_->state_;
  s.buffers.reset();
  if (model != nullptr) {
    tandem::runtime::detail::buffer_snapshot saved;
    // A buffer that could not be written back exactly: the part is not restartable.
    if (!saved.save(*model)) return restartable_part(false);
    s.buffers.emplace(std::move(saved));
  }
  return restartable_part(true);
}

restartable_part::restartable_part(bool marks) {
  if (marks) scope_ = std::make_unique<tandem::runtime::restartable_scope>();
}

restartable_part::restartable_part(restartable_part&& other) noexcept = default;

restartable_part::~restartable_part() = default;

void iteration_scope::report_loss(double loss) {
  TANDEM_EXPECTS(job_ != nullptr, usage_error, "report_loss on an iteration already ended");
  job_->state_->loss = loss;
  job_->state_->reported_loss = true;
}

void iteration_scope::end() {
  TANDEM_EXPECTS(job_ != nullptr, usage_error, "end on an iteration already ended");
  auto* owner = std::exchange(job_, nullptr);
  owner->end_iteration(std::nullopt);
}

bool iteration_scope::end_after_exception(const std::string& why) {
  TANDEM_EXPECTS(job_ != nullptr, usage_error, "ending an iteration already ended");
  auto* owner = std::exchange(job_, nullptr);
  return owner->end_iteration(why);
}

void iteration_scope::fail(const std::string& reason) {
  TANDEM_EXPECTS(job_ != nullptr, usage_error, "fail on an iteration already ended");
  auto* owner = std::exchange(job_, nullptr);
  owner->end_iteration(reason);
}

// ---- job

job::job(std::unique_ptr<state> s) : state_(std::move(s)) {}

job::job(job&& other) noexcept = default;

job::~job() {
  if (state_ == nullptr || state_->left) return;
  try {
    leave();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: job '%s' could not leave: %s\n", state_->spec.name.c_str(),
                 e.what());
  }
}

const std::string& job::name() const {
  return state_->spec.name;
}

c10::Device job::device() const {
  return state_->context().torch_device;
}

std::int64_t job::iterations() const {
  return static_cast<std::int64_t>(state_->result.iteration_log.size());
}

iteration_scope job::iteration() {
  auto& s = *state_;
  s.expect_own_thread("iteration()");
  TANDEM_EXPECTS(
      !s.left && s.result.status == tandem::runtime::job_status::completed, usage_error,
      "job '" + s.spec.name + "' has left the runtime" +
          (s.result.status != tandem::runtime::job_status::completed ? " (" + s.result.error + ")"
                                                                     : std::string()) +
          "; join again to train more");
  TANDEM_EXPECTS(!s.in_iteration, usage_error,
                 "job '" + s.spec.name + "': an iteration is already under way; end it first");
  auto& context = s.context();
  s.requested_s = context.gate.now();
  try {
    s.result.wait_s += context.gate.wait_for_start(s.id);
  } catch (const tandem::runtime::run_stopped& e) {
    s.stop_with(tandem::runtime::job_status::stopped, e.what());
    throw;
  } catch (const std::exception& e) {
    s.stop_with(tandem::runtime::job_status::failed, e.what());
    throw;
  }
  s.start_s = context.gate.now();
  if (s.result.iteration_log.empty()) s.result.first_start_s = s.start_s;
  s.in_iteration = true;
  s.loss = 0;
  s.iteration_kind.emplace(alloc_kind::feature_map);
  s.runner->begin(iterations());
  if (s.passive) s.begin_footprint(iterations());
  return iteration_scope(*this);
}

void job::run_iteration(const std::function<void(iteration_scope&)>& body) {
  for (;;) {
    auto step = iteration();
    try {
      body(step);
    } catch (...) {
      // Libtorch may rethrow iteration_restarted as its own error: the gate knows.
      std::string why = "an exception left iteration " + std::to_string(iterations());
      try {
        throw;
      } catch (const std::exception& e) {
        why = e.what();
      } catch (...) {
      }
      if (step.end_after_exception(why)) continue;  // cut short: it runs again
      throw;
    }
    step.end();
    return;
  }
}

bool job::end_iteration(std::optional<std::string> failure) {
  auto& s = *state_;
  if (!s.in_iteration) return false;
  s.expect_own_thread("ending an iteration");
  s.in_iteration = false;
  s.iteration_kind.reset();
  tandem::runtime::plan_traffic traffic;
  std::string label;
  if (s.footprint && !failure) {
    // What is out comes back for the next iteration (or the user, who may hold it), and the
    // recorded iteration is planned.
    try {
      traffic = s.end_footprint();
      label = s.footprint->label(traffic);
      s.footprint.reset();
    } catch (const c10::Error& e) {
      if (!s.context().gate.restart_owed(s.id)) failure = e.what_without_backtrace();
    } catch (const std::exception& e) {
      // No room for it now (it stays on the host, its data intact, until read), a failure an
      // operation's start met, or a plan that could not be made: the iteration fails.
      if (!s.context().gate.restart_owed(s.id)) failure = e.what();
    }
  }
  if (s.footprint) {
    // Cut short or failed: what the executor and the swapper hold of it goes back.
    if (s.runner) s.runner->stop_gating();
    s.footprint->cut();
    s.footprint.reset();
    s.recording.reset();
  }
  if (failure && s.context().gate.restart_owed(s.id)) {
    // Told to let go: the model's buffers as they were, what the iteration took back, and the
    // policy hears of the restart; the job asks to start the iteration again.
    if (s.buffers) s.buffers->restore();
    s.buffers.reset();
    auto cut = s.runner->abandon(s.start_s);
    s.result.restarted_attempts.push_back({s.start_s, cut.end_s});
    ++s.result.restarts;
    s.context().gate.restart_iteration(s.id, std::move(cut));
    return true;
  }
  s.buffers.reset();
  if (failure) {
    s.result.unfinished_start_s = s.start_s;
    // The policy sees the job leave now, so that nobody waits on it; the pool, once the job
    // itself goes (after the user's tensors, which it outlives), in leave().
    s.stop_with(tandem::runtime::job_status::failed, *failure);
    return false;
  }
  const auto report = s.runner->end(s.start_s);
  // What the job holds between iterations, measured while it still holds it (its model is gone
  // by the time the job leaves).
  s.result.persistent_bytes =
      s.context().pool.stats(s.id).by_kind[memory::index_of(alloc_kind::persistent)].live_bytes;
  auto record = s.runner->record(report, s.requested_s, s.loss);
  record.traffic = traffic;
  record.plan = std::move(label);
  s.result.iteration_log.push_back(std::move(record));
  if (s.planned) s.result.footprint = s.planned->iteration_ended(s.result.iteration_log);
  s.context().gate.finish_iteration(s.id, report);
  return false;
}

persistent_scope job::persistent() {
  state_->expect_own_thread("persistent()");
  TANDEM_EXPECTS(!state_->left, usage_error, "job '" + state_->spec.name + "' has left");
  return persistent_scope();
}

void job::fail(const std::string& reason) {
  auto& s = *state_;
  if (s.left) return;
  s.result.status = tandem::runtime::job_status::failed;
  s.result.error = reason;
  leave();
}

void job::leave() {
  auto& s = *state_;
  if (s.left) return;
  const bool own_thread = std::this_thread::get_id() == s.thread;
  s.left = true;
  if (s.in_iteration) {
    // Left mid-iteration (from a destructor during unwinding, or fail()): the iteration failed.
    s.in_iteration = false;
    s.iteration_kind.reset();
    if (s.result.status == tandem::runtime::job_status::completed) {
      s.result.status = tandem::runtime::job_status::failed;
      s.result.error = "the job left during iteration " + std::to_string(iterations());
    }
  }
  s.runner.reset();
  if (own_thread) {
    if (s.footprint) s.footprint->cut();
    s.footprint.reset();
    s.recording.reset();
    s.planned.reset();  // before the pool forgets the job: they may hold tensors on the host
    s.passive.reset();
    s.on_stream.reset();
    s.binding.reset();
  } else {
    // The swapper's, the recorder's and the executor's RecordFunction callbacks are the joining
    // thread's and cannot be removed from here: they are leaked, alive, so that they never
    // reach freed memory.
    static_cast<void>(s.recording.release());
    static_cast<void>(s.planned.release());
    static_cast<void>(s.passive.release());
    // The binding belongs to the joining thread's stack of bindings; undoing it here would
    // corrupt this thread's. That thread's later allocations fail with a clear error instead.
    std::fprintf(stderr, "tandem: job '%s' left from a thread other than the one that joined\n",
                 s.spec.name.c_str());
    static_cast<void>(s.binding.release());
    // Likewise the joining thread's current stream, which only that thread can restore.
    static_cast<void>(s.on_stream.release());
  }
  s.on_device.reset();
  if (s.groups) s.result.wait_s += s.groups->waited_s();
  tandem::runtime::detail::leave(s.spec, s.id, s.context(), s.stream, s.result);
  // A loop that never reported a loss has none (its iterations recorded 0).
  if (!s.reported_loss) {
    s.result.first_loss.reset();
    s.result.last_loss.reset();
  }
  std::lock_guard lock(s.owner->mutex);
  s.owner->results[s.slot] = s.result;
  s.owner->threads[s.slot] = std::thread::id();
  s.owner->departed.notify_all();
}

// ---- runtime

namespace {

/// Checks join's options before anything is taken (config_error naming the option) and makes
/// the job's spec of them.
tandem::runtime::job_spec checked_job_spec(const std::string& name, const job_options& options) {
  TANDEM_EXPECTS(!name.empty(), usage_error, "join: a job needs a name");
  TANDEM_EXPECTS(options.batch_size >= 0, config_error,
                 "join: batch_size must be 0 (not counted) or more, not " +
                     std::to_string(options.batch_size));
  TANDEM_EXPECTS(!options.iterations || *options.iterations > 0, config_error,
                 "join: iterations, when given, must be above 0, not " +
                     std::to_string(options.iterations.value_or(0)));
  // A plan's budget asks for a plan: by the default planner where none is named.
  const std::string planner = options.planner.empty() && !options.plan_budget.empty()
                                  ? std::string(footprint::default_planner)
                                  : options.planner;
  TANDEM_EXPECTS(
      planner.empty() || !options.iterations ||
          *options.iterations >= tandem::runtime::detail::planned_job_min_iterations,
      config_error,
      "join: a job with a planner needs at least " +
          std::to_string(tandem::runtime::detail::planned_job_min_iterations) +
          " iterations (one to warm up, one recorded and planned, one to settle, one plain "
          "reference, then the planned ones), not " +
          std::to_string(options.iterations.value_or(0)));
  tandem::runtime::job_spec spec;
  spec.name = name;
  spec.model = options.model;
  spec.batch_size = options.batch_size;
  spec.iterations = options.iterations;
  spec.priority = options.priority;
  if (planner.empty()) return spec;
  tandem::runtime::check_planner_spec(planner, "join: planner");
  spec.planner = planner;
  if (!options.plan_budget.empty()) {
    try {
      spec.plan_budget = tandem::runtime::parse_footprint_budget(options.plan_budget);
    } catch (const config_error& e) {
      throw config_error(std::string("join: plan_budget: ") + e.what());
    }
  }
  return spec;
}

}  // namespace

runtime::runtime(const runtime_options& options) : shared_(std::make_shared<shared>()) {
  TANDEM_EXPECTS(options.policy != "static" || options.expected_jobs != 0, config_error,
                 "runtime options: policy static splits the budget into one partition per job; "
                 "set expected_jobs to the number of jobs that will join");
  TANDEM_EXPECTS(options.expected_jobs <= tandem::runtime::max_jobs, config_error,
                 "runtime options: expected_jobs " + std::to_string(options.expected_jobs) +
                     " is more than the " + std::to_string(tandem::runtime::max_jobs) +
                     " jobs a runtime takes");
  shared_->spec = workload_of(options);
  check_reservable(shared_->spec, options);
  // One runtime owns libtorch's CPU allocator at a time; say so in the API's own terms.
  try {
    shared_->device = std::make_unique<tandem::runtime::detail::shared_device>(
        tandem::runtime::detail::shared_device_options{.spec = &shared_->spec,
                                                       .overrides = {},
                                                       .expected_jobs = options.expected_jobs,
                                                       .timeline = options.timeline,
                                                       .record_allocations = false,
                                                       .faults = nullptr});
  } catch (const usage_error& e) {
    throw usage_error(std::string("another tandem runtime (or tandem run) owns libtorch's CPU "
                                  "allocator in this process; close it first (") +
                      e.what() + ")");
  }
}

void runtime::close() {
  if (shared_->device == nullptr) return;
  shared_->await_departures(shared_->device->gate().stop_requested());
  shared_->closed = results();
  shared_->take_down();
}

runtime::~runtime() = default;

job runtime::join(const std::string& name, const job_options& options) {
  auto spec = checked_job_spec(name, options);
  TANDEM_EXPECTS(shared_->device != nullptr, usage_error, "join: the runtime was closed");
  auto& device = *shared_->device;
  TANDEM_EXPECTS(device.context().backend.kind() == device::backend_kind::cpu ||
                     (!options.swap_passively && options.planner.empty()),
                 config_error,
                 std::string("join: ") + tandem::runtime::cuda_plans_unsupported +
                     ", nor passive swapping; leave planner and swap_passively out");
  // A stop that came first (Ctrl-C while the loops start) is the job's first boundary.
  if (device.gate().stop_requested()) {
    throw stopped("join: the runtime was stopped; no job joins after stop()");
  }
  auto s = std::make_unique<job::state>();
  s->owner = shared_;
  s->thread = std::this_thread::get_id();
  s->slot = shared_->take_slot(name, s->thread);
  s->spec = std::move(spec);
  s->result = tandem::runtime::detail::result_for(s->spec);
  try {
    s->enter_pool(device);
  } catch (...) {
    shared_->withdraw(s->slot);
    throw;
  }
  job joined(std::move(s));
  try {
    joined.state_->start(device, options.swap_passively);
  } catch (...) {
    // It arrived: it leaves as any job does, then its slot goes as if it never joined.
    joined.leave();
    shared_->withdraw(joined.state_->slot);
    throw;
  }
  return joined;
}

void runtime::change_budget(std::string_view size) {
  TANDEM_EXPECTS(shared_->device != nullptr, usage_error, "change_budget: the runtime was closed");
  const auto bytes = parse_bytes(size);
  auto& device = *shared_->device;
  TANDEM_EXPECTS(bytes > 0 && bytes <= device.pool().stats().capacity, usage_error,
                 "change_budget: " + std::string(size) + " must be above 0 and at most the " +
                     "capacity " + format_bytes(device.pool().stats().capacity));
  device.gate().change_budget(bytes);
}

void runtime::stop() {
  if (shared_->device != nullptr) shared_->device->gate().stop();
}

tandem::runtime::run_result runtime::results() const {
  if (shared_->device == nullptr) {
    TANDEM_EXPECTS(shared_->closed.has_value(), usage_error, "results: the runtime is gone");
    return *shared_->closed;
  }
  std::vector<tandem::runtime::job_result> jobs;
  std::vector<std::int64_t> ids;
  bool all_left = true;
  {
    std::lock_guard lock(shared_->mutex);
    for (std::size_t j = 0; j < shared_->results.size(); ++j) {
      if (shared_->withdrawn[j]) continue;
      if (!shared_->results[j]) {
        all_left = false;
        continue;
      }
      jobs.push_back(*shared_->results[j]);
      ids.push_back(shared_->ids[j]);
    }
  }
  return shared_->device->finish("the library API", std::move(jobs), ids, all_left);
}

}  // namespace tandem::api
