#include "training_job.hpp"

#include <ATen/record_function.h>
#include <c10/core/StreamGuard.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <random>
#include <string_view>
#include <thread>

#include "buffer_snapshot.hpp"
#include "fault_hook.hpp"
#include "footprint_iteration.hpp"
#include "group_gate.hpp"
#include "iteration_runner.hpp"
#include "planned_training.hpp"
#include "planned_variants.hpp"
#include "sequence_recording.hpp"
#include "tandem/common/error.hpp"
#include "tandem/memory/tensor_classifier.hpp"
#include "tandem/models/optimizer.hpp"
#include "tandem/models/zoo.hpp"
#include "tandem/runtime/restartable_scope.hpp"
#include "tandem/torch/intra_op_threads.hpp"
#include "tandem/torch/job_binding.hpp"
#include "tandem/torch/passive_swapper.hpp"

namespace tandem::runtime::detail {

namespace {

using memory::alloc_kind;
using phase = job_progress::phase;

// first_loss and last_loss average this many iterations, so one noisy batch does not decide
// whether a job learned.
constexpr std::size_t loss_window = 5;

/// The zoo's `name` with its weights on `device` (built on the CPU, as the zoo builds them).
std::unique_ptr<models::model> placed_model(const std::string& name,
                                            const models::model_options& options,
                                            c10::Device device) {
  auto made = models::make_model(name, options);
  if (!device.is_cpu()) made->to(device);
  return made;
}

/// The model, its optimizer and the state of the iteration loop. Destroying it frees every
/// tensor the job made, which must happen before the pool forgets the job.
class trainer {
 public:
  trainer(const job_spec& spec, const models::model_options& options, c10::Device device)
      : spec_(spec),
        model_(placed_model(spec.model, options, device)),
        optimizer_(
            models::make_optimizer(spec.optimizer, model_->parameters(), spec.learning_rate)),
        batch_seed_(options.seed * 1'000'003u) {
    TANDEM_EXPECTS(spec.batch_size >= model_->min_batch_size(), config_error,
                   "job '" + spec.name + "': model '" + spec.model +
                       "' needs batch_size >= " + std::to_string(model_->min_batch_size()) +
                       " to train (batch norm), not " + std::to_string(spec.batch_size));
    model_->module().train();
  }

  /// One training step; returns the loss. Gradients are dropped after the step (set to none,
  /// as PyTorch 2 does by default), so they are per-iteration memory like the feature maps.
  /// `recording`: the step is recorded as an access sequence, begun here (where the model and
  /// optimizer are, to name their tensors) with its phases marked; the caller ends it once the
  /// step has returned (and freed its loss).
  double step(std::int64_t iteration, sequence_recording* recording = nullptr) {
    torch::Tensor loss;
    if (recording != nullptr) recording->begin(model_->module(), *optimizer_);
    // The forward and backward passes can be cut short and run again (iteration_restarted):
    // they change nothing but the buffers, saved first, and the gradients, dropped on a roll
    // back. Not the update: some weights may have changed already.
    std::optional<restartable_scope> restartable;
    if (buffers_.save(model_->module())) restartable.emplace();
    {
      now_ = stage::forward;
      torch_support::kind_scope forward(alloc_kind::feature_map);
      const auto batch =
          model_->make_batch(spec_.batch_size, batch_seed_ + static_cast<std::uint64_t>(iteration));
      loss = model_->loss(model_->forward(batch.input), batch.target);
    }
    {
      now_ = stage::backward;
      torch_support::kind_scope backward(alloc_kind::gradient);
      if (recording != nullptr) recording->recorder().enter(footprint::phase::backward);
      loss.backward();
    }
    restartable.reset();
    now_ = stage::update;
    {
      if (recording != nullptr) recording->recorder().enter(footprint::phase::optimizer);
      // The optimizer makes its state (momentum, Adam's moments) on the first step: that
      // state lives as long as the job.
      torch_support::kind_scope update(iteration == 0 ? alloc_kind::persistent
                                                      : alloc_kind::temporary);
      optimizer_->step();
    }
    for (auto& parameter : model_->parameters()) parameter.mutable_grad() = torch::Tensor();
    return loss.item<double>();
  }

  /// Undoes a step cut short in its forward or backward pass: its tensors are gone with the
  /// exception, but for a backward pass's half-run graph, which libtorch keeps in the thread's
  /// ready queue until the thread ends; its buffer updates and gradients are undone here.
  /// Returns whether such a graph was left behind.
  [[nodiscard]] bool roll_back() {
    buffers_.restore();
    for (auto& parameter : model_->parameters()) parameter.mutable_grad() = torch::Tensor();
    return now_ == stage::backward;
  }

 private:
  enum class stage { forward, backward, update };
  const job_spec& spec_;
  std::unique_ptr<models::model> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::uint64_t batch_seed_;
  buffer_snapshot buffers_;
  stage now_ = stage::forward;
};

/// An inference job's model: forward passes without gradients, the module in eval mode (batch
/// norm uses its running statistics, dropout is off).
class server {
 public:
  server(const job_spec& spec, const models::model_options& options, c10::Device device)
      : spec_(spec),
        model_(placed_model(spec.model, options, device)),
        batch_seed_(options.seed * 1'000'003u) {
    model_->module().eval();
  }

  /// One forward pass of a batch of the model's synthetic inputs, seeded by `request` (0: the
  /// warm-up). Its activations are per-request memory, all freed when it returns.
  void serve(std::int64_t request) {
    torch::NoGradGuard no_grad;
    torch_support::kind_scope forward(alloc_kind::feature_map);
    const auto batch =
        model_->make_batch(spec_.batch_size, batch_seed_ + static_cast<std::uint64_t>(request));
    // The response goes back to the host: nothing to do on the CPU, where the pass ran on this
    // thread; on a device that queues work, this waits for it, so the latency covers it.
    static_cast<void>(model_->forward(batch.input).cpu());
  }

 private:
  const job_spec& spec_;
  std::unique_ptr<models::model> model_;
  std::uint64_t batch_seed_;
};

/// What the job holds between iterations: its weights, buffers and optimizer state.
std::size_t persistent_bytes(memory::device_pool& pool, memory::job_id id) {
  return pool.stats(id).by_kind[memory::index_of(alloc_kind::persistent)].live_bytes;
}

bool finished(const job_spec& spec, const job_result& result, double now_s) {
  if (spec.iterations)
    return static_cast<std::int64_t>(result.iteration_log.size()) >= *spec.iterations;
  return now_s - result.first_start_s >= spec.duration_s.value_or(0);
}

/// Builds a job's model (a trainer or a server) inside its first grant, which began at
/// `granted_s`, so that a policy that runs one job at a time does not hold a waiting job's
/// weights in memory; its allocations are persistent. Records the setup time and the first
/// start (the end of the setup).
template <typename Model>
std::unique_ptr<Model> build_in_grant(const job_spec& spec, const models::model_options& options,
                                      double granted_s, training_context& context,
                                      job_progress& progress, job_result& result) {
  progress.now = phase::setup;
  std::unique_ptr<Model> model;
  {
    torch_support::kind_scope persistent(alloc_kind::persistent);
    model = std::make_unique<Model>(spec, options, context.torch_device);
  }
  result.first_start_s = context.gate.now();
  result.setup_s = result.first_start_s - granted_s;
  return model;
}

/// A training job's model and executors, which outlive the job's threads: a backward pass cut
/// short leaves its half-run graph in the thread's autograd ready queue, so the job goes on
/// on a fresh thread (train()) and the old one takes the graph with it.
struct training_loop {
  std::unique_ptr<trainer> job;
  // Destroyed before the model: an iteration cut short leaves copies under way, which the
  // executor waits for before the memory they touch can go back to the pool.
  std::optional<planned_training> planned;
  // Or the policy chooses, iteration by iteration, between the plain iteration and plans.
  std::optional<planned_variants> variants;
  // Either one's iterations before the plan (warm-up, recorded, settling, reference) swap the job's
  // own tensors out when its budget runs short: Capuchin's passive mode (passive_swapper.hpp).
  std::optional<torch_support::passive_swapper> passive;
  bool prepared = false;
  /// Set when an iteration was cut short in its backward pass: its restart is reported once
  /// the thread, and the graph it kept, are gone.
  std::optional<schedule::iteration_report> restart_after_thread;

  void prepare(const job_spec& spec, memory::job_id id, training_context& context) {
    if (prepared) return;
    prepared = true;
    if (spec.planner) {
      planned.emplace(*spec.planner, spec.plan_budget, context.copy_bandwidth, context.pool,
                      context.monitor, context.copies, id, context.joint,
                      context.gate.stop_token());
    }
    if (!spec.planner && context.policy_planner) {
      variants.emplace(*context.policy_planner, context.copy_bandwidth, context.pool,
                       context.monitor, context.copies, id, context.gate.stop_token());
    }
    if (planned || variants) passive.emplace(context.pool, id, context.copies);
  }
  /// Frees every tensor the job made; on the job's thread, while the pool knows the job.
  void release() {
    passive.reset();
    variants.reset();
    planned.reset();
    job.reset();
  }
};

/// A training job's loop: forward, backward and update, back to back as the policy allows.
/// Returns early, with loop.restart_after_thread set, when the thread must end for a restart.
void train_iterations(const job_spec& spec, const models::model_options& model_options,
                      memory::job_id id, training_context& context, iteration_runner& runner,
                      job_progress& progress, job_result& result, training_loop& loop) {
  auto& gate = context.gate;
  loop.prepare(spec, id, context);
  auto& job = loop.job;
  auto& planned = loop.planned;
  auto& variants = loop.variants;
  auto& passive = loop.passive;
  for (;;) {
    progress.now = phase::waiting;
    const double requested_s = gate.now();
    result.wait_s += gate.wait_for_start(id);
    double start_s = gate.now();
    if (!job) {
      job = build_in_grant<trainer>(spec, model_options, start_s, context, progress, result);
      start_s = result.first_start_s;
    }
    progress.now = phase::training;
    const auto iteration = static_cast<std::int64_t>(result.iteration_log.size());
    double loss = 0;
    // The iteration whose operations and allocations are recorded is also recorded as an access
    // sequence, when it is known to be the last (not for a job run for a duration), and so is a
    // planned job's iteration 1, which its plan is made from.
    const auto stage = planned    ? stage_of(iteration)
                       : variants ? offered_stage_of(iteration)
                                  : planned_stage::reference;
    std::optional<sequence_recording> recording;
    if ((spec.iterations && records_operations(spec, iteration, context.monitor)) ||
        stage == planned_stage::recorded) {
      recording.emplace(context.pool, context.monitor, id);
    }
    const std::size_t variant = variants ? gate.granted_variant(id) : 0;
    footprint_iteration footprint({planned ? &*planned : nullptr, variants ? &*variants : nullptr,
                                   passive ? &*passive : nullptr},
                                  stage, variant, recording ? &recording->recorder() : nullptr);
    result.unfinished_start_s = start_s;
    plan_traffic traffic;
    std::optional<schedule::iteration_report> ran;
    try {
      ran = runner.run(iteration, start_s, [&] {
        footprint.begin();
        loss = job->step(iteration, recording ? &*recording : nullptr);
        traffic = footprint.end();
        if (recording) {
          auto sequence = recording->end(spec.model, spec.batch_size);
          auto storages = recording->recorder().storages();
          recording.reset();
          if (planned && stage == planned_stage::recorded)
            planned->plan(sequence, std::move(storages));
          result.access_sequence = std::move(sequence);
        }
      });
    } catch (...) {
      // Told to let go (the exception may come back from libtorch as its own type): back to
      // the iteration's start, reported as restarted, and asked for again.
      if (!gate.restart_owed(id)) throw;
      runner.stop_gating();
      footprint.cut();
      recording.reset();
      const bool graph_left = job->roll_back();
      auto cut = runner.abandon(start_s);
      result.unfinished_start_s.reset();
      result.restarted_attempts.push_back({start_s, cut.end_s});
      if (graph_left) {
        loop.restart_after_thread = std::move(cut);
        return;
      }
      gate.restart_iteration(id, std::move(cut));
      ++result.restarts;
      continue;
    }
    ran->swapped_on_demand_bytes = footprint.swapped_on_demand_bytes();
    const auto& report = *ran;
    if (variants && stage == planned_stage::recorded && result.access_sequence) {
      // Offered once the iteration is measured: the plans' curves are scaled from its own.
      // Where passive swapping capped its curve, the plans are offered raised from it.
      const std::size_t passive_peak = traffic.swapped_out_bytes > 0 ? report.peak_bytes : 0;
      gate.offer_variants(id, variants->plan(*result.access_sequence, report.held,
                                             report.end_s - report.start_s, passive_peak));
    }
    auto record = runner.record(report, requested_s, loss);
    record.traffic = traffic;
    record.plan = footprint.label(traffic);
    result.iteration_log.push_back(std::move(record));
    result.unfinished_start_s.reset();
    progress.iterations = static_cast<std::int64_t>(result.iteration_log.size());
    gate.finish_iteration(id, report);
    if (planned) result.footprint = planned->iteration_ended(result.iteration_log);
    if (finished(spec, result, report.end_s)) break;
  }
  result.persistent_bytes = persistent_bytes(context.pool, id);
}

/// An inference job's life: built on its first grant, one warm-up pass (its iteration 0,
/// reported like any iteration, so that a policy learns its memory), then live: requests arrive
/// as a Poisson process (exponential gaps at the job's rate, from its request seed), each served
/// by one forward pass once the policy lets it start. Requests queue in order behind a slow one.
/// It ends after its requests, or when the next would arrive after its duration since going
/// live.
void serve_requests(const job_spec& spec, const models::model_options& model_options,
                    memory::job_id id, training_context& context, iteration_runner& runner,
                    job_progress& progress, job_result& result) {
  auto& gate = context.gate;
  progress.now = phase::waiting;
  result.wait_s += gate.wait_for_start(id);
  const auto model =
      build_in_grant<server>(spec, model_options, gate.now(), context, progress, result);
  progress.now = phase::serving;
  const auto warm_up = runner.run(0, result.first_start_s, [&] { model->serve(0); });
  gate.finish_iteration(id, warm_up);

  const double live_s = warm_up.end_s;
  std::mt19937_64 random(spec.request_seed);
  std::exponential_distribution<double> gap(spec.request_rate);
  double arrival_s = live_s;
  for (std::int64_t request = 1;; ++request) {
    arrival_s += gap(random);
    const bool done = spec.iterations ? request > *spec.iterations
                                      : arrival_s > live_s + spec.duration_s.value_or(0);
    if (done) break;
    progress.now = phase::idle;
    gate.sleep_until(arrival_s);  // at once when it is late; throws run_stopped on a stop
    progress.now = phase::waiting;
    const double requested_s = gate.now();
    result.wait_s += gate.wait_for_start(id);
    progress.now = phase::serving;
    result.unfinished_start_s = gate.now();
    const auto report =
        runner.run(request, *result.unfinished_start_s, [&] { model->serve(request); });
    result.iteration_log.push_back(runner.record(report, requested_s, 0));
    result.unfinished_start_s.reset();
    result.latencies_s.push_back(report.end_s - arrival_s);
    progress.iterations = static_cast<std::int64_t>(result.iteration_log.size());
    gate.finish_iteration(id, report);
  }
  result.persistent_bytes = persistent_bytes(context.pool, id);
}

double mean(const std::vector<iteration_record>& log, std::size_t from, std::size_t to) {
  double sum = 0;
  for (std::size_t i = from; i < to; ++i) sum += log[i].loss;
  return sum / static_cast<double>(to - from);
}

void summarize(job_result& result, const job_spec& spec) {
  const auto& log = result.iteration_log;
  summarize_rates(result);
  if (spec.kind == job_kind::inference) {
    result.latency = summarize_latencies(result.latencies_s);
  } else if (!log.empty()) {
    const auto window = std::min(loss_window, log.size());
    result.first_loss = mean(log, 0, window);
    result.last_loss = mean(log, log.size() - window, log.size());
  }
}

/// What a job keeps from one of its threads to the next (train()): the classifier's table, the
/// gates, the fault plan's count, the iteration runner and the training loop.
struct job_life {
  job_life(const job_spec& spec, memory::job_id id, training_context& context, job_result& result)
      : groups(context.gate, context.pool, id),
        runner(spec, id, context, learner(spec), groups, result) {
    if (auto planned = fault_for(context.faults, spec.name)) {
      fault.emplace(groups, *planned, context.gate, id);
    }
  }
  /// Kinds learned from a training job's own allocations (Zico §6.2); the phase scopes in
  /// trainer::step supply the fallback for what it has not learned. An inference job's kinds
  /// come from its scopes alone (weights persistent, the forward pass's activations feature
  /// maps): the classifier takes an iteration's peak for the start of backward, and would call
  /// what a forward-only pass makes after its peak gradients.
  memory::tensor_classifier* learner(const job_spec& spec) {
    return spec.kind == job_kind::training ? &classifier : nullptr;
  }
  torch_support::allocation_hook& hook() {
    return fault ? static_cast<torch_support::allocation_hook&>(*fault) : groups;
  }

  memory::tensor_classifier classifier;
  group_gate groups;
  std::optional<fault_hook> fault;
  iteration_runner runner;
  training_loop loop;
};

/// The job's work, on a thread train() starts for it: everything libtorch keeps per thread for
/// this job (the autograd engine's ready queue with the gradients of a backward pass that
/// failed, thread-local caches) is destroyed when that thread ends, while the pool still knows
/// the job. Failures land in `result`. Returns with life.loop.restart_after_thread set when the
/// job must go on on a fresh thread.
void run_job(const job_spec& spec, const models::model_options& model_options, memory::job_id id,
             training_context& context, device::stream& stream, const job_device& on_device,
             job_progress& progress, job_result& result, job_life& life) noexcept {
  try {
    // Denormal floats slow CPU kernels by orders of magnitude when a model's values drift
    // towards zero, which would turn a policy comparison into a numerics lottery. The setting
    // is per thread; OpenMP workers, created later from this thread, inherit it.
    at::globalContext().setFlushDenormal(true);
    torch_support::set_intra_op_threads(static_cast<int>(spec.threads));
    torch_support::job_binding binding(context.pool, id, stream, life.learner(spec), &life.hook());
    // On CUDA the job's kernels go on its own stream, which the pool maps to the job.
    const c10::OptionalStreamGuard on_job_stream(on_device.torch_stream());
    // The model lives inside these calls, and is freed here when the job ends, fails or stops,
    // while the pool still knows the job.
    try {
      if (spec.kind == job_kind::inference) {
        serve_requests(spec, model_options, id, context, life.runner, progress, result);
      } else {
        train_iterations(spec, model_options, id, context, life.runner, progress, result,
                         life.loop);
        if (life.loop.restart_after_thread) return;
      }
    } catch (...) {
      life.loop.release();
      throw;
    }
    life.loop.release();
    result.wait_s += life.groups.waited_s();
    result.status = job_status::completed;
  } catch (const run_stopped& e) {
    // Asked to stop at a boundary: the iterations measured so far stay in the result.
    result.status = job_status::stopped;
    result.error = e.what();
  } catch (const c10::Error& e) {
    result.status = job_status::failed;
    result.error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    result.status = job_status::failed;
    result.error = e.what();
  } catch (...) {
    result.status = job_status::failed;
    result.error = "unknown exception";
  }
}

}  // namespace

job_result result_for(const job_spec& spec) {
  job_result result;
  result.name = spec.name;
  result.kind = spec.kind;
  result.model = spec.model;
  result.batch_size = spec.batch_size;
  result.threads = spec.threads;
  return result;
}

void leave(const job_spec& spec, memory::job_id id, training_context& context,
           std::unique_ptr<device::stream>& stream, job_result& result) noexcept {
  auto& gate = context.gate;
  // Memory released and departure reported as one step of the gate: no other job's gate call
  // sees this job gone from the pool but still present to the policy.
  bool released = false;
  const auto release = [&] {
    released = true;
    const auto stats = context.pool.stats(id);
    result.peak_live_bytes = stats.peak_live_bytes;
    result.peak_reserved_bytes = stats.peak_reserved_bytes;
    result.allocations = stats.allocations;
    // The pool counts refusals: this tells an OOM apart even when libtorch rethrew it as its
    // own error type.
    result.out_of_memory = result.status == job_status::failed && stats.out_of_memory > 0;
    context.pool.remove_job(id);
    // Only now: the pool may use a job's stream until it forgets the job.
    if (context.retired != nullptr && stream &&
        context.backend.kind() == device::backend_kind::cuda) {
      context.retired->keep(std::move(stream));
    }
    stream.reset();
  };
  try {
    gate.depart(id, release);
    // A job the policy saw leave already (a user's loop that failed, library API) still leaves
    // the pool here.
    if (!released) release();
  } catch (const std::exception& e) {
    if (result.error.empty()) result.error = std::string("leaving: ") + e.what();
    result.status = job_status::failed;
    gate.close(std::string("a job could not leave cleanly: ") + e.what());
  }
  if (result.out_of_memory && spec.planner && result.iteration_log.size() < 3) {
    result.error +=
        "\n  planned job: the iterations before its plan swap passively, which cannot move the "
        "tensors an operation is using nor close the holes between what stays: the budget must "
        "hold the job's persistent memory, its largest operation's tensors and room around "
        "them (tandem plan shows the vanilla peak)";
  }
  result.end_s = gate.now();
  summarize(result, spec);
}

job_result train(const job_spec& spec, const models::model_options& model_options,
                 memory::job_id id, double arrival_s, training_context& context,
                 job_progress& progress) noexcept {
  auto result = result_for(spec);
  result.arrival_s = arrival_s;
  std::unique_ptr<device::stream> stream;
  std::unique_ptr<job_device> on_device;  // after the job's tensors, before its stream
  try {
    stream = context.backend.create_stream(spec.name, device::stream_kind::compute);
    on_device = make_job_device(context.pool, id, *stream, context.inflight_limit);
    job_life life(spec, id, context, result);
    // Its own thread, ended before the pool forgets the job: see run_job. A restart in a
    // backward pass ends the thread, and with it the half-run graph; the job goes on on a new one.
    for (;;) {
      std::thread worker([&] {
        run_job(spec, model_options, id, context, *stream, *on_device, progress, result, life);
      });
      worker.join();
      auto& cut = life.loop.restart_after_thread;
      if (!cut) break;
      context.pool.synchronize(id);  // what the graph held is back before the others hear
      context.gate.restart_iteration(id, std::move(*cut));
      cut.reset();
      ++result.restarts;
    }
  } catch (const std::exception& e) {
    result.status = job_status::failed;
    result.error = std::string("starting the job: ") + e.what();
  }
  on_device.reset();
  leave(spec, id, context, stream, result);
  progress.now = result.status == job_status::completed ? phase::completed
                 : result.status == job_status::stopped ? phase::stopped
                                                        : phase::failed;
  return result;
}

}  // namespace tandem::runtime::detail
