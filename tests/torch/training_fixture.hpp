#pragma once
// What the torch tests train on: a job on a pool of its own, trained as the runtime trains it
// (gradients set to none after each step), with a meter of the job's live bytes, so that a test
// can run plain, recorded, planned or passively swapped iterations and compare their losses.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/footprint/access_sequence.hpp"
#include "tandem/memory/device_pool.hpp"
#include "tandem/memory/fallback_scope.hpp"
#include "tandem/memory/no_wait_scope.hpp"
#include "tandem/models/optimizer.hpp"
#include "tandem/models/zoo.hpp"
#include "tandem/torch/access_recorder.hpp"
#include "tandem/torch/cpu_allocator.hpp"
#include "tandem/torch/job_binding.hpp"
#include "tandem/torch/passive_swapper.hpp"
#include "tandem/torch/plan_executor.hpp"

namespace tandem::torch_support::testing {

/// The job's live bytes as the pool sees them, and their highest since the last reset.
class live_meter final : public memory::trace_sink {
 public:
  void on_event(const memory::trace_event& event) override {
    if (event.op == memory::trace_op::alloc) {
      live_ += event.bytes;
      peak_ = std::max(peak_, live_);
    } else if (event.op == memory::trace_op::free) {
      live_ -= event.bytes;
    }
  }
  void reset_peak() { peak_ = live_; }
  [[nodiscard]] std::size_t peak() const { return peak_; }

 private:
  std::size_t live_ = 0;
  std::size_t peak_ = 0;
};

inline memory::pool_options pool_of(std::size_t capacity) {
  memory::pool_options options;
  options.capacity = capacity;
  options.budget = capacity;
  options.region_size = 2 * MiB;
  options.small_threshold = 64 * KiB;
  return options;
}

/// What a test trains: a loss per iteration, from parameters the optimizer steps.
class trainee {
 public:
  virtual ~trainee() = default;
  virtual torch::Tensor loss(std::int64_t iteration) = 0;
  virtual std::vector<torch::Tensor> parameters() = 0;
};

class zoo_trainee final : public trainee {
 public:
  zoo_trainee(const std::string& name, std::int64_t batch)
      : model_(models::make_model(name, models::default_options(name))), batch_(batch) {
    model_->module().train();
  }
  torch::Tensor loss(std::int64_t iteration) override {
    const auto batch = model_->make_batch(batch_, 1000 + static_cast<std::uint64_t>(iteration));
    return model_->loss(model_->forward(batch.input), batch.target);
  }
  std::vector<torch::Tensor> parameters() override { return model_->parameters(); }

 private:
  std::unique_ptr<models::model> model_;
  std::int64_t batch_;
};

using make_trainee = std::function<std::unique_ptr<trainee>()>;

inline make_trainee zoo(const std::string& name, std::int64_t batch) {
  return [=] { return std::make_unique<zoo_trainee>(name, batch); };
}

/// Refuses every allocation of the thread it is bound on, as a full budget would.
class refusing_hook final : public allocation_hook {
 public:
  void before_allocation(std::size_t bytes) override {
    memory::oom_report report;
    report.requested_bytes = bytes;
    report.cause = "refused by the test";
    throw memory::out_of_memory_error(report);
  }
};

/// Refuses the allocations that may be put off or whose caller copes with a refusal (a plan's
/// prefetch, a swap-in needed now: memory::no_wait_scope, memory::fallback_scope), as a pool
/// with no memory to be had does; serves the rest.
class refusing_swap_ins final : public allocation_hook {
 public:
  void before_allocation(std::size_t bytes) override {
    if (!memory::no_wait_scope::here() && !memory::fallback_scope::here()) return;
    memory::oom_report report;
    report.requested_bytes = bytes;
    report.cause = "refused by the test";
    if (memory::no_wait_scope::here()) report.put_off = true;
    throw memory::out_of_memory_error(report);
  }
};

/// Trains as the runtime does (gradients set to none after each step), on a pool of its own,
/// and lets a test record an iteration and run plans on the later ones.
class training {
 public:
  explicit training(const make_trainee& make)
      : stream_(backend_.create_stream("job", device::stream_kind::compute)),
        pool_(backend_, pool_of(1 * GiB)),
        job_(pool_.add_job("job")),
        installed_(pool_),
        bound_(pool_, job_, *stream_),
        trainee_(make()),
        optimizer_(models::make_optimizer("sgd", trainee_->parameters(), 0.01)) {
    pool_.set_trace_sink(&meter_);
  }
  ~training() { pool_.set_trace_sink(nullptr); }
  training(const training&) = delete;
  training& operator=(const training&) = delete;

  /// One step; returns its loss. `recorder` marks the phases when given.
  double step(std::int64_t iteration, access_recorder* recorder = nullptr) {
    const auto loss = trainee_->loss(iteration);
    if (recorder != nullptr) recorder->enter(footprint::phase::backward);
    loss.backward();
    if (recorder != nullptr) recorder->enter(footprint::phase::optimizer);
    optimizer_->step();
    for (auto& parameter : trainee_->parameters()) parameter.mutable_grad() = torch::Tensor();
    return loss.item<double>();
  }

  /// Records iteration `iteration` (its loss in `loss`); with `swapper`, under its passive
  /// swapping, which the recorder follows. `storages`: where to put the storages of its
  /// persistent tensors.
  footprint::access_sequence record(std::int64_t iteration, double& loss,
                                    passive_swapper* swapper = nullptr,
                                    persistent_storages* storages = nullptr) {
    access_recorder recorder(pool_, job_, &meter_);
    pool_.set_trace_sink(&recorder);
    if (swapper != nullptr) swapper->begin(&recorder);
    recorder.begin();
    loss = step(iteration, &recorder);
    if (swapper != nullptr) swapper->end();
    auto sequence = recorder.end("job", 0);
    if (storages != nullptr) *storages = recorder.storages();
    pool_.set_trace_sink(&meter_);
    return sequence;
  }

  /// Iteration 0 plain and iteration 1 recorded, as a planned job runs them before its plan:
  /// their losses go to `losses`, the storages of its persistent tensors to `storages`; returns
  /// the recorded sequence.
  footprint::access_sequence warm_up_and_record(std::vector<double>& losses,
                                                persistent_storages& storages) {
    std::size_t peak = 0;
    losses.push_back(plain(0, peak));
    double loss = 0;
    auto sequence = record(1, loss, nullptr, &storages);
    losses.push_back(loss);
    return sequence;
  }

  /// Runs iteration `iteration` under `executor`; its loss, and the pool's peak in `peak`.
  double execute(plan_executor& executor, std::int64_t iteration, std::size_t& peak) {
    pool_.set_trace_sink(&executor);
    meter_.reset_peak();
    executor.begin();
    const double loss = step(iteration);
    executor.end();
    peak = meter_.peak();
    pool_.set_trace_sink(&meter_);
    return loss;
  }

  /// Runs iteration `iteration` under `executor` as execute() does, with no memory to be had for
  /// any tensor of the plan coming back (refusing_swap_ins); returns its loss.
  double execute_refusing_swap_ins(plan_executor& executor, std::int64_t iteration) {
    refusing_swap_ins refusing;
    const job_binding nothing_for_swap_ins(pool_, job_, *stream_, nullptr, &refusing);
    std::size_t peak = 0;
    return execute(executor, iteration, peak);
  }

  /// `from.bring_back(to)` with no memory to be had for any tensor coming back.
  void bring_back_refusing_swap_ins(plan_executor& from, plan_executor* to) {
    refusing_swap_ins refusing;
    const job_binding nothing_for_swap_ins(pool_, job_, *stream_, nullptr, &refusing);
    from.bring_back(to);
  }

  /// Runs iteration `iteration`'s forward pass under `executor` and ends the iteration there, as
  /// one cut short, with no memory to be had at its end (every allocation refused): returns
  /// whether end() threw out of memory.
  bool cut_after_forward(plan_executor& executor, std::int64_t iteration) {
    pool_.set_trace_sink(&executor);
    executor.begin();
    {
      const auto loss = trainee_->loss(iteration);
      static_cast<void>(loss.item<double>());
    }
    refusing_hook refusing;
    bool refused = false;
    {
      const job_binding nothing_left(pool_, job_, *stream_, nullptr, &refusing);
      try {
        executor.end();
      } catch (const memory::out_of_memory_error&) {
        refused = true;
      }
    }
    pool_.set_trace_sink(&meter_);
    return refused;
  }

  /// Runs iteration `iteration` as it is, or under `swapper`'s passive swapping.
  double plain(std::int64_t iteration, std::size_t& peak, passive_swapper* swapper = nullptr) {
    meter_.reset_peak();
    if (swapper != nullptr) swapper->begin();
    const double loss = step(iteration);
    if (swapper != nullptr) swapper->end();
    peak = meter_.peak();
    return loss;
  }

  [[nodiscard]] memory::device_pool& pool() { return pool_; }
  [[nodiscard]] memory::job_id job() const { return job_; }
  [[nodiscard]] device::cpu_backend& backend() { return backend_; }
  [[nodiscard]] live_meter& meter() { return meter_; }

 private:
  // A copy engine slow enough that copies really overlap computing, fast enough for a test.
  device::cpu_backend backend_{{.memory_limit = 0, .copy_bandwidth = 4e9}};
  std::unique_ptr<device::stream> stream_;
  memory::device_pool pool_;
  memory::job_id job_;
  live_meter meter_;
  cpu_allocator_scope installed_;
  job_binding bound_;
  std::unique_ptr<trainee> trainee_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace tandem::torch_support::testing
