// Host time in the simulator (src/sim/host_stream.hpp, Note [Host runs ahead]): the host issues
// operations ahead of the device, host time fills nothing on the device, the in-flight limit
// holds, jobs share the host cores, and a solo job takes exactly its profile's time.

#include "../../src/sim/host_stream.hpp"

#include <gtest/gtest.h>

#include "tandem/common/units.hpp"
#include "tandem/schedule/baselines.hpp"
#include "tandem/sim/simulator.hpp"

namespace tandem::sim {
namespace {

using detail::solo_completions;
using detail::stream_cursor;
using detail::stream_stage;

/// `count` operations of `host_s` and `device_s` each at `fill`, timed as a solo iteration.
std::shared_ptr<job_profile> hosted_profile(double host_s, double device_s, double fill, int count,
                                            std::size_t in_flight = 0) {
  const std::vector<stream_stage> stages(static_cast<std::size_t>(count), {host_s, device_s});
  const auto completions = solo_completions(stages, in_flight);
  auto profile = std::make_shared<job_profile>();
  profile->model = "toy";
  profile->persistent_tensors = {10 * MiB};
  double previous = 0;
  for (const double c : completions) {
    profile->operations.push_back({"op", c - previous, fill, 0, host_s, device_s});
    previous = c;
  }
  profile->held.held_at_start = 10 * MiB;
  profile->held.duration_s = previous;
  profile->peak_live_bytes = 10 * MiB;
  return profile;
}

simulated_job job(std::string name, std::shared_ptr<job_profile> profile) {
  simulated_job j;
  j.spec.name = std::move(name);
  j.spec.model = "toy";
  j.spec.batch_size = 10;
  j.spec.iterations = 5;
  j.profile = std::move(profile);
  return j;
}

device_model device(unsigned host_cores = 0, std::size_t in_flight = 0) {
  device_model d;
  d.description = "test device";
  d.capacity = 1 * GiB;
  d.host_cores = host_cores;
  d.in_flight_ops = in_flight;
  return d;
}

/// Aggregate samples/s of two copies of `profile` side by side over one after another.
double spatial_over_temporal(const std::shared_ptr<job_profile>& profile, const device_model& on) {
  schedule::temporal_policy temporal;
  schedule::spatial_policy spatial;
  const std::vector<simulated_job> jobs = {job("a", profile), job("b", profile)};
  const auto t = simulate(jobs, temporal, on);
  const auto s = simulate(jobs, spatial, on);
  return s.aggregate_samples_per_s / t.aggregate_samples_per_s;
}

TEST(HostStream, SoloTimeOverlapsHostAndDevice) {
  // Host-bound: the device waits for each operation's host time.
  EXPECT_NEAR(solo_completions({{1, 0.5}, {1, 0.5}}, 0).back(), 2.0, 1e-9);
  // Device-bound: the host runs ahead; only the first operation's host time shows.
  const auto device_bound = solo_completions({{0.1, 1}, {0.1, 1}, {0.1, 1}}, 0);
  EXPECT_NEAR(device_bound[0], 1.0, 1e-9);
  EXPECT_NEAR(device_bound[2], 3.0, 1e-9);
  // No host time: the device's time alone, as before host time was modelled.
  EXPECT_NEAR(solo_completions({{0, 0.25}, {0, 0.75}}, 0).back(), 1.0, 1e-12);
}

TEST(HostStream, TheHostNeverRunsMoreThanTheInFlightLimitAhead) {
  const std::vector<stream_stage> stages(10, {0.01, 1});
  for (const std::size_t limit : {1u, 2u, 4u}) {
    stream_cursor cursor;
    for (int guard = 0; guard < 1000 && !cursor.done(stages); ++guard) {
      cursor.settle(stages, limit);
      ASSERT_LE(cursor.host_stage, cursor.device_stage + limit);
      const double host = cursor.host_busy(stages, limit) ? 1.0 : 0.0;
      const double device = cursor.device_demand(stages, host);
      const double dt = cursor.time_to_next(stages, host, device, 1e300);
      cursor.advance(stages, dt, host, device, 1e300);
    }
    EXPECT_TRUE(cursor.done(stages)) << limit;
  }
}

TEST(HostStream, HostTimeFillsNothingSoTwoHostBoundJobsNearlyDouble) {
  // 90% of each operation is host time: side by side, each job's device fills the other's gaps.
  EXPECT_GT(spatial_over_temporal(hosted_profile(0.9, 0.1, 1.0, 10), device()), 1.8);
}

TEST(HostStream, TwoDeviceBoundJobsThatFillTheDeviceGainNothing) {
  EXPECT_NEAR(spatial_over_temporal(hosted_profile(0.01, 1, 1.0, 10), device()), 1.0, 0.02);
}

TEST(HostStream, JobsSharingOneHostCoreGainNothingFromHostGaps) {
  // One core for both: their host time runs one after the other, as the device would have.
  EXPECT_NEAR(spatial_over_temporal(hosted_profile(0.9, 0.1, 1.0, 10), device(1)), 1.0, 0.12);
}

TEST(HostStream, ASoloJobTakesItsProfilesTimeWithAndWithoutAnInFlightLimit) {
  for (const std::size_t limit : {0u, 1u, 3u}) {
    const auto profile = hosted_profile(0.3, 0.2, 0.5, 7, limit);
    schedule::exclusive_policy exclusive;
    const auto result = simulate({job("a", profile)}, exclusive, device(0, limit));
    for (const auto& it : result.jobs[0].iteration_log)
      EXPECT_NEAR(it.end_s - it.start_s, profile->solo_iteration_s(), 1e-9) << limit;
  }
}

TEST(HostStream, TheSameInputsGiveTheSameRun) {
  const auto profile = hosted_profile(0.4, 0.3, 0.7, 9, 2);
  schedule::spatial_policy spatial;
  const std::vector<simulated_job> jobs = {job("a", profile), job("b", profile)};
  const auto first = simulate(jobs, spatial, device(1, 2));
  const auto second = simulate(jobs, spatial, device(1, 2));
  ASSERT_EQ(first.jobs.size(), second.jobs.size());
  for (std::size_t i = 0; i < first.jobs.size(); ++i) {
    ASSERT_EQ(first.jobs[i].iteration_log.size(), second.jobs[i].iteration_log.size());
    for (std::size_t k = 0; k < first.jobs[i].iteration_log.size(); ++k)
      EXPECT_EQ(first.jobs[i].iteration_log[k].end_s, second.jobs[i].iteration_log[k].end_s);
  }
}

}  // namespace
}  // namespace tandem::sim
