#include "shared_device.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "planned_training.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/runtime/session.hpp"
#include "tandem/schedule/registry.hpp"
#include "tandem/torch/matched_copy_bandwidth.hpp"

namespace tandem::runtime::detail {

namespace {

/// The backend's line for reports, saying where an automatic copy bandwidth came from.
std::string describe_device(const device::backend& backend, const device_spec& device) {
  auto text = backend.describe();
  if (device.kind == device::backend_kind::cpu &&
      device.copy_bandwidth.how == copy_rate::mode::matched) {
    text += ", copy bandwidth matched to a V100 over PCIe 3.0 (GEMM " +
            std::to_string(std::lround(torch_support::measured_gemm_flops() / 1e9)) +
            " GFLOP/s on one core)";
  }
  return text;
}

}  // namespace

shared_device::borrow_gate_installation::borrow_gate_installation(memory::device_pool& pool,
                                                                  memory::borrow_gate* gate)
    : pool_(pool) {
  pool_.set_borrow_gate(gate);
}

shared_device::borrow_gate_installation::~borrow_gate_installation() {
  pool_.set_borrow_gate(nullptr);
}

shared_device::shared_device(const shared_device_options& options)
    : device_(options.spec->device), budget_(budget_of(*options.spec, options.overrides)) {
  const auto& spec = *options.spec;
  const auto copy_bandwidth = copy_bandwidth_of(device_);
  backend_ = make_training_backend(device_, copy_bandwidth);
  memory::pool_options pool_settings;
  pool_settings.capacity = device_.capacity;
  pool_settings.budget = budget_;
  if (device_.region_size != 0) pool_settings.region_size = device_.region_size;
  pool_ = std::make_unique<memory::device_pool>(*backend_, pool_settings);
  pool_->set_diagnostic_handler([this](const std::string& message) {
    std::fprintf(stderr, "tandem: %s\n", message.c_str());
    std::lock_guard lock(warnings_mutex_);
    warnings_.push_back(message);
  });
  origin_ = std::chrono::steady_clock::now();
  auto context = policy_context_of(spec, options.overrides, budget_);
  if (options.expected_jobs != 0) context.job_count = options.expected_jobs;
  policy_ = schedule::make_policy(policy_name(spec, options.overrides), context);
  capabilities_ = schedule::capabilities_of(*policy_);
  monitor_ = std::make_unique<memory_monitor>(
      options.timeline, origin_, options.record_allocations,
      capabilities_.groups != nullptr && capabilities_.groups->wants_memory_events());
  pool_->set_trace_sink(monitor_.get());
  allocator_ = install_torch_allocator(*pool_);
  if (capabilities_.progress != nullptr)
    capabilities_.progress->set_progress_source(monitor_.get());
  const auto expected =
      options.expected_jobs != 0 ? options.expected_jobs : std::numeric_limits<std::size_t>::max();
  gate_ = std::make_unique<policy_gate>(*policy_, *pool_, expected, origin_);
  if (capabilities_.oom_baseline == nullptr) waiter_.emplace(capabilities_.borrows, *gate_);
  borrow_gate_.emplace(*pool_, waiter_ ? &*waiter_ : nullptr);
  copies_ = std::make_unique<device::copy_channel>(*backend_);
  joint_ = std::make_unique<joint_footprint>(real_plan_costs(copy_bandwidth));
  context_ = std::make_unique<training_context>(
      training_context{*backend_, *pool_, *gate_, *monitor_,
                       options.faults != nullptr ? *options.faults : no_faults_, *copies_,
                       copy_bandwidth, policy_planner_of(spec, options.overrides), joint_.get(),
                       torch_device_of(device_), device_.inflight_limit, &retired_});
}

shared_device::~shared_device() {
  retired_.release();  // no job runs any more
  pool_->set_trace_sink(nullptr);
}

void shared_device::uninstall_allocator() {
  retired_.release();
  allocator_.reset();
}

run_result shared_device::finish(std::string source, std::vector<job_result> jobs,
                                 const std::vector<std::int64_t>& ids, bool all_left) {
  // No job runs once every one has left: the cuBLAS workspaces of their streams go back now,
  // not counted as memory the pool still holds.
  if (all_left) retired_.release();
  std::vector<std::string> warnings;
  if (const auto left = pool_->stats();
      all_left && (left.reserved_bytes != 0 || left.live_bytes != 0)) {
    warnings.push_back("after every job left, the pool still holds " +
                       format_bytes(left.reserved_bytes) + " of regions (" +
                       format_bytes(left.live_bytes) + " live)");
  }
  run_result run;
  run.workload = std::move(source);
  run.policy = policy_->name();
  run.device = describe_device(*backend_, device_);
  const auto stats = pool_->stats();
  run.capacity_bytes = stats.capacity;
  run.budget_bytes = budget_;
  run.peak_live_bytes = stats.peak_live_bytes;
  run.peak_reserved_bytes = stats.peak_reserved_bytes;
  if (capabilities_.statistics != nullptr) {
    for (std::size_t j = 0; j < jobs.size() && j < ids.size(); ++j) {
      if (ids[j] >= 0) {
        jobs[j].policy_stats =
            capabilities_.statistics->job_statistics(static_cast<schedule::job_id>(ids[j]));
      }
    }
    run.policy_stats = capabilities_.statistics->system_statistics();
  }
  run.switches = gate_->switch_latency();
  {
    std::lock_guard lock(warnings_mutex_);
    run.warnings = warnings_;
  }
  run.warnings.insert(run.warnings.end(), warnings.begin(), warnings.end());
  run.jobs = std::move(jobs);
  summarize_run(run);
  run.stopped = run.stopped_jobs() > 0;
  return run;
}

}  // namespace tandem::runtime::detail
