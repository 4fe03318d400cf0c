#include <string>
#include <thread>

#include "tandem/common/error.hpp"
#include "tandem/memory/pool_options.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/session.hpp"

namespace tandem::runtime {

profile_set profile_workload(const workload& spec, std::int64_t iterations, std::ostream* progress,
                             std::stop_token stop) {
  TANDEM_EXPECTS(iterations >= 2, config_error,
                 "profiles need at least 2 iterations (the first also builds optimizer state), "
                 "got " +
                     std::to_string(iterations));
  run_options options;
  options.overrides.policy = "exclusive";
  options.record_allocations = true;
  options.stop = stop;
  validate_training_workload(spec, options);
  TANDEM_EXPECTS(spec.device.kind == device::backend_kind::cpu, config_error,
                 spec.source +
                     ": profiles are recorded on the CPU backend only: a profile holds each "
                     "job's tensor access sequence, and on a CUDA device the backward pass runs "
                     "on libtorch's shared autograd thread, which the recorder does not follow "
                     "yet; set [device] kind = \"cpu\"");

  profile_set profiles;
  profiles.workload = spec.source;
  profiles.cores = std::thread::hardware_concurrency();
  for (const auto& job : spec.jobs) {
    if (stop.stop_requested()) {
      job_profile skipped;
      skipped.name = job.name;
      skipped.model = job.model;
      skipped.batch_size = job.batch_size;
      skipped.threads = job.threads;
      skipped.stopped = true;
      skipped.error = "not profiled: profiling was stopped before this job";
      profiles.jobs.push_back(std::move(skipped));
      continue;
    }
    // Alone: one job, arriving at once, for exactly `iterations` iterations.
    workload alone = spec;
    alone.jobs = {job};
    alone.jobs.front().arrival_s = 0;
    alone.jobs.front().iterations = iterations;
    alone.jobs.front().duration_s.reset();
    // A profile is of the job as it is: a planner's plan is made from the profile, not run.
    alone.jobs.front().planner.reset();
    alone.device.budget_schedule.clear();
    if (progress != nullptr) *progress << "profiling " << job.name << " (" << job.model << ")\n";
    const auto run = run_workload(alone, options);
    profiles.device = run.device;
    const auto& measured = run.jobs.front();
    job_profile profile;
    profile.name = measured.name;
    profile.model = measured.model;
    profile.batch_size = measured.batch_size;
    profile.threads = measured.threads;
    profile.completed = measured.status == job_status::completed;
    profile.stopped = measured.status == job_status::stopped;
    profile.error = profile.stopped
                        ? "stopped after " + std::to_string(measured.iteration_log.size()) +
                              " of " + std::to_string(iterations) + " iterations"
                        : measured.error;
    profile.setup_s = measured.setup_s;
    for (const auto& it : measured.iteration_log)
      profile.iteration_s.push_back(it.end_s - it.start_s);
    profile.persistent_bytes = measured.persistent_bytes;
    profile.peak_live_bytes = measured.peak_live_bytes;
    profile.peak_reserved_bytes = measured.peak_reserved_bytes;
    profile.last_iteration = measured.last_iteration;
    if (profile.completed) profile.sequence = measured.access_sequence;
    profiles.jobs.push_back(std::move(profile));
  }
  profiles.region_size =
      spec.device.region_size != 0 ? spec.device.region_size : memory::pool_options{}.region_size;
  return profiles;
}

}  // namespace tandem::runtime
