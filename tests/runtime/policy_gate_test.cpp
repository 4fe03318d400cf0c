// The policy gate drives real threads through the policy interface: these tests run baseline
// policies with threads standing in for jobs (no libtorch), and check the gate's own duties.

#include "tandem/runtime/policy_gate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/schedule/baselines.hpp"
#include "tandem/schedule/group_gating.hpp"

namespace tandem::runtime {
namespace {

using namespace std::chrono_literals;
using schedule::decision;
using schedule::job_info;

class PolicyGate : public ::testing::Test {
 protected:
  memory::pool_options small_pool() {
    memory::pool_options options;
    options.capacity = 64 * MiB;
    options.region_size = 2 * MiB;
    return options;
  }
  device::cpu_backend backend_;
  memory::device_pool pool_{backend_, small_pool()};
};

/// Runs `iterations` iterations of each job on its own thread through the gate; records the
/// (job, start, end) of every iteration.
struct iteration_span {
  memory::job_id job;
  double start;
  double end;
};

std::vector<iteration_span> run_jobs(policy_gate& gate, const std::vector<memory::job_id>& jobs,
                                     int iterations) {
  std::mutex mutex;
  std::vector<iteration_span> spans;
  std::vector<std::thread> threads;
  for (const auto job : jobs)
    gate.arrive(job_info::make(job, "job" + std::to_string(job), gate.now(), iterations));
  for (const auto job : jobs) {
    threads.emplace_back([&, job] {
      for (int i = 0; i < iterations; ++i) {
        gate.wait_for_start(job);
        const double start = gate.now();
        std::this_thread::sleep_for(5ms);
        const double end = gate.now();
        {
          std::lock_guard lock(mutex);
          spans.push_back({job, start, end});
        }
        gate.finish_iteration(job, {start, end, 0, {}, {}});
      }
      gate.depart(job);
    });
  }
  for (auto& thread : threads) thread.join();
  return spans;
}

TEST_F(PolicyGate, TemporalNeverRunsTwoIterationsAtOnceAndTakesTurns) {
  schedule::temporal_policy policy;
  policy_gate gate(policy, pool_, 3);
  const std::vector<memory::job_id> jobs{pool_.add_job("a"), pool_.add_job("b"),
                                         pool_.add_job("c")};
  auto spans = run_jobs(gate, jobs, 6);
  ASSERT_EQ(spans.size(), 18u);
  std::sort(spans.begin(), spans.end(), [](auto& x, auto& y) { return x.start < y.start; });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    EXPECT_LE(spans[i - 1].end, spans[i].start)
        << "iterations " << i - 1 << " and " << i << " overlap";
  }
  // Round-robin: once all three are asking, no job runs twice in a row. A thread may reach the
  // gate late (slow thread start under sanitizers), so the check begins once every job has run.
  std::size_t all_asking = 0;
  for (std::vector<memory::job_id> seen; seen.size() < jobs.size(); ++all_asking) {
    ASSERT_LT(all_asking, spans.size()) << "a job never ran";
    if (std::find(seen.begin(), seen.end(), spans[all_asking].job) == seen.end())
      seen.push_back(spans[all_asking].job);
  }
  // It ends once a job has run its last iteration: the others may then run back to back.
  std::size_t all_present = spans.size();
  for (const auto job : jobs) {
    std::size_t last = 0;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      if (spans[i].job == job) last = i;
    }
    all_present = std::min(all_present, last + 1);
  }
  for (std::size_t i = all_asking; i < all_present; ++i)
    EXPECT_NE(spans[i - 1].job, spans[i].job) << "at iteration " << i;
}

TEST_F(PolicyGate, ExclusiveRunsJobsOneAfterAnotherInArrivalOrder) {
  schedule::exclusive_policy policy;
  policy_gate gate(policy, pool_, 3);
  const std::vector<memory::job_id> jobs{pool_.add_job("a"), pool_.add_job("b"),
                                         pool_.add_job("c")};
  auto spans = run_jobs(gate, jobs, 4);
  std::sort(spans.begin(), spans.end(), [](auto& x, auto& y) { return x.start < y.start; });
  ASSERT_EQ(spans.size(), 12u);
  for (std::size_t i = 0; i < spans.size(); ++i) EXPECT_EQ(spans[i].job, jobs[i / 4]) << i;
}

TEST_F(PolicyGate, SpatialLetsJobsOverlap) {
  schedule::spatial_policy policy;
  policy_gate gate(policy, pool_, 2);
  const std::vector<memory::job_id> jobs{pool_.add_job("a"), pool_.add_job("b")};
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (const auto job : jobs) gate.arrive(job_info::make(job, "j", 0, 1));
  for (const auto job : jobs) {
    threads.emplace_back([&, job] {
      gate.wait_for_start(job);
      const int now_inside = ++inside;
      int seen = most.load();
      while (seen < now_inside && !most.compare_exchange_weak(seen, now_inside)) {
      }
      // Stay until the other is inside too (bounded, so a failure cannot hang).
      for (int i = 0; i < 2000 && most.load() < 2; ++i) std::this_thread::sleep_for(1ms);
      --inside;
      gate.finish_iteration(job, {0, 0, 0, {}, {}});
      gate.depart(job);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(most.load(), 2);
}

TEST_F(PolicyGate, StaticPartitionsReachThePoolAsJobLimits) {
  schedule::static_partition_policy policy(32 * MiB, 2);
  policy_gate gate(policy, pool_, 2);
  const auto a = pool_.add_job("a");
  gate.arrive(job_info::make(a, "a", 0, 1));
  auto stream = backend_.create_stream("a", device::stream_kind::compute);
  void* inside = pool_.allocate(a, *stream, 10 * MiB);
  EXPECT_THROW(static_cast<void>(pool_.allocate(a, *stream, 10 * MiB)),
               memory::out_of_memory_error);
  pool_.deallocate(a, inside);
  pool_.detach_stream(a, *stream);
  gate.depart(a);
}

/// A policy that never lets anyone start: the gate must fail the jobs, not hang.
class stuck_policy final : public schedule::policy {
 public:
  [[nodiscard]] std::string_view name() const override { return "stuck"; }
  decision may_start(memory::job_id, double) override { return decision::wait_for_event(); }
};

TEST_F(PolicyGate, APolicyThatParksEveryJobFailsThemWithAClearError) {
  stuck_policy policy;
  policy_gate gate(policy, pool_, 2);
  const auto a = pool_.add_job("a");
  const auto b = pool_.add_job("b");
  gate.arrive(job_info::make(a, "a", 0, 1));
  gate.arrive(job_info::make(b, "b", 0, 1));
  std::vector<std::string> errors(2);
  std::thread first([&] {
    try {
      gate.wait_for_start(a);
    } catch (const gate_closed& e) {
      errors[0] = e.what();
    }
  });
  std::thread second([&] {
    try {
      gate.wait_for_start(b);
    } catch (const gate_closed& e) {
      errors[1] = e.what();
    }
  });
  first.join();
  second.join();
  for (const auto& error : errors) {
    EXPECT_NE(error.find("policy 'stuck' left every job (a, b) waiting"), std::string::npos)
        << error;
  }
}

/// Lets a job start only at or after a time: the gate must wake it then, with no event.
class not_before_policy final : public schedule::policy {
 public:
  explicit not_before_policy(double at) : at_(at) {}
  [[nodiscard]] std::string_view name() const override { return "not-before"; }
  decision may_start(memory::job_id, double now) override {
    return now >= at_ ? decision::start() : decision::wait_until(at_);
  }

 private:
  double at_;
};

// A job letting go of its iteration (a failure or restart that libtorch swallowed inside an
// operation's callback leaves it running on) does not wait at a group boundary, where the others,
// waiting for its regions, would keep it forever.
TEST_F(PolicyGate, AJobLettingGoDoesNotWaitAtAGroupBoundary) {
  const auto job = pool_.add_job("a");
  {
    schedule::spatial_policy policy;  // fails on out of memory: every memory wait gives up
    policy_gate gate(policy, pool_, 1);
    gate.arrive(job_info::make(job, "a", 0, 2));
    gate.wait_for_start(job);
    ASSERT_EQ(gate.memory_wait(job, false, 2 * MiB), schedule::memory_wait_verdict::give_up);
    EXPECT_THROW((void)gate.wait_for_group(job, 1, true), memory::out_of_memory_error);
    gate.depart(job);
  }
  schedule::temporal_policy policy;
  policy_gate gate(policy, pool_, 1);
  gate.arrive(job_info::make(job, "a", 0, 2));
  gate.wait_for_start(job);
  gate.inject_restart(job);
  EXPECT_THROW((void)gate.wait_for_group(job, 1, true), iteration_restarted);
  gate.depart(job);
}

/// Starts every iteration and holds every job at its first group boundary for good.
class holds_at_group final : public schedule::policy, public schedule::group_gating {
 public:
  [[nodiscard]] std::string_view name() const override { return "holds at group"; }
  decision may_start(memory::job_id, double) override { return decision::start(); }
  [[nodiscard]] std::vector<std::size_t> group_boundaries(memory::job_id) const override {
    return {1};
  }
  void on_group_end(memory::job_id, std::size_t, double) override {}
  decision may_enter_group(memory::job_id, std::size_t, double) override {
    return decision::wait_for_event();
  }
  void on_group_start(memory::job_id, std::size_t, double) override {}
  [[nodiscard]] bool wants_memory_events() const override { return false; }
};

// b waits at a group boundary; a waits for regions where it cannot restart (inside an
// operation's callback). b is woken to let go there, so a need not fail.
TEST_F(PolicyGate, AJobAtAGroupBoundaryIsWokenToLetGoWhereTheOtherCouldOnlyFail) {
  holds_at_group policy;
  policy_gate gate(policy, pool_, 2);
  const auto a = pool_.add_job("a");
  const auto b = pool_.add_job("b");
  gate.arrive(job_info::make(a, "a", 0, 1));
  gate.arrive(job_info::make(b, "b", 0, 1));
  gate.wait_for_start(a);
  gate.wait_for_start(b);
  std::atomic<bool> restarted{false};
  std::thread at_boundary([&] {
    try {
      (void)gate.wait_for_group(b, 1, true);
    } catch (const iteration_restarted&) {
      restarted = true;
    }
  });
  while (gate.held_up_by(b).empty()) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(gate.memory_wait(a, false, 2 * MiB), schedule::memory_wait_verdict::keep_waiting);
  at_boundary.join();
  EXPECT_TRUE(restarted);
  gate.restart_iteration(b, {});
  gate.memory_wait_ended(a);
  gate.depart(a);
  gate.depart(b);
}

TEST_F(PolicyGate, AWaitUntilVerdictWakesTheJobAtThatTime) {
  not_before_policy policy(0.05);
  policy_gate gate(policy, pool_, 1);
  const auto a = pool_.add_job("a");
  gate.arrive(job_info::make(a, "a", 0, 1));
  const double waited = gate.wait_for_start(a);
  EXPECT_GE(gate.now(), 0.05);
  EXPECT_GT(waited, 0.0);
  gate.depart(a);
}

TEST_F(PolicyGate, ClosingWakesWaitersAndRefusesLaterStarts) {
  schedule::exclusive_policy policy;
  policy_gate gate(policy, pool_, 3);  // a third job never arrives: not a stall
  const auto a = pool_.add_job("a");
  const auto b = pool_.add_job("b");
  gate.arrive(job_info::make(a, "a", 0, 1));
  gate.arrive(job_info::make(b, "b", 0, 1));
  gate.wait_for_start(a);  // a owns the device; b waits
  std::string error;
  std::thread waiter([&] {
    try {
      gate.wait_for_start(b);
    } catch (const gate_closed& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(20ms);
  gate.close("cancelled by the test");
  waiter.join();
  EXPECT_EQ(error, "cancelled by the test");
  EXPECT_THROW(gate.wait_for_start(a), gate_closed);
}

TEST_F(PolicyGate, StopWakesAWaitingJobWithRunStoppedAndRefusesLaterStarts) {
  schedule::exclusive_policy policy;
  policy_gate gate(policy, pool_, 2);
  const auto a = pool_.add_job("a");
  const auto b = pool_.add_job("b");
  gate.arrive(job_info::make(a, "a", 0, 5));
  gate.arrive(job_info::make(b, "b", 0, 5));
  gate.wait_for_start(a);  // a runs; b waits for it to leave, which it never does here
  std::atomic<bool> stopped{false};
  std::thread waiter([&] {
    try {
      gate.wait_for_start(b);
    } catch (const run_stopped&) {
      stopped = true;
    }
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(gate.stop_requested());
  gate.stop();
  waiter.join();
  EXPECT_TRUE(stopped.load());
  EXPECT_TRUE(gate.stop_requested());
  // a finishes the iteration under way; its next start is refused, though the policy would
  // let it.
  gate.finish_iteration(a, {0, gate.now(), 0, {}, {}});
  EXPECT_THROW(gate.wait_for_start(a), run_stopped);
  // Leaving still works: a stopped job releases its memory through depart as always.
  gate.depart(a);
  gate.depart(b);
}

TEST_F(PolicyGate, StopEndsASleepAtOnce) {
  schedule::spatial_policy policy;
  policy_gate gate(policy, pool_, 1);
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    gate.stop();
  });
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_THROW(gate.sleep_until(3600), run_stopped);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s);
  stopper.join();
  EXPECT_THROW(gate.sleep_until(0), run_stopped);  // after a stop, even a past time throws
}

TEST_F(PolicyGate, SleepUntilSleepsWithoutAStop) {
  schedule::spatial_policy policy;
  policy_gate gate(policy, pool_, 1);
  gate.sleep_until(gate.now() + 0.02);
  EXPECT_GE(gate.now(), 0.02);
}

TEST_F(PolicyGate, MisuseIsAUsageError) {
  schedule::spatial_policy policy;
  policy_gate gate(policy, pool_, 1);
  const auto x = pool_.add_job("x");
  EXPECT_THROW(gate.wait_for_start(x), usage_error);  // not arrived yet
  gate.arrive(job_info::make(x, "x", 0, 1));
  EXPECT_THROW(gate.arrive(job_info::make(x, "x", 0, 1)), usage_error);
  gate.depart(x);
  gate.depart(x);  // idempotent
}

TEST_F(PolicyGate, AJobReleasedWhileDepartingIsNeverSeenHalfGone) {
  // Static applies limits to every present job on each departure: a job removed from the pool
  // but still present would make that fail.
  schedule::static_partition_policy policy(32 * MiB, 2);
  policy_gate gate(policy, pool_, 2);
  const auto a = pool_.add_job("a");
  const auto b = pool_.add_job("b");
  gate.arrive(job_info::make(a, "a", 0, 1));
  gate.arrive(job_info::make(b, "b", 0, 1));
  gate.depart(a, [&] { pool_.remove_job(a); });
  gate.depart(b, [&] { pool_.remove_job(b); });
  EXPECT_EQ(pool_.stats().jobs, 0u);
}

TEST_F(PolicyGate, AFailedReleaseStillDepartsAndIsRethrown) {
  schedule::exclusive_policy policy;
  policy_gate gate(policy, pool_, 2);
  const auto a = pool_.add_job("a");
  const auto b = pool_.add_job("b");
  gate.arrive(job_info::make(a, "a", 0, 1));
  gate.arrive(job_info::make(b, "b", 0, 1));
  EXPECT_THROW(gate.depart(a, [] { throw device_error("stream lost"); }), device_error);
  EXPECT_GE(gate.wait_for_start(b), 0.0);  // a is gone for the policy: b owns the device
  gate.depart(b);
}

TEST_F(PolicyGate, TemporalSwitchesBetweenTwoJobsAreMeasured) {
  schedule::temporal_policy policy;
  policy_gate gate(policy, pool_, 2);
  const std::vector<memory::job_id> jobs{pool_.add_job("a"), pool_.add_job("b")};
  static_cast<void>(run_jobs(gate, jobs, 6));
  const auto samples = gate.switch_samples();
  EXPECT_FALSE(samples.empty());
  for (const double sample : samples) EXPECT_GE(sample, 0.0);
  const auto summary = gate.switch_latency();
  EXPECT_EQ(summary.count, samples.size());
  EXPECT_GT(summary.count, 0u);
  EXPECT_LE(summary.p50_s, summary.p95_s);
  EXPECT_LE(summary.p95_s, summary.max_s);
  // Each switch follows one of the other job's 6 iteration ends or its departure.
  EXPECT_LE(summary.count, 14u);
}

TEST_F(PolicyGate, JobsThatNeverWaitMakeNoSwitchSamples) {
  schedule::spatial_policy policy;
  policy_gate gate(policy, pool_, 2);
  const std::vector<memory::job_id> jobs{pool_.add_job("a"), pool_.add_job("b")};
  static_cast<void>(run_jobs(gate, jobs, 4));
  EXPECT_TRUE(gate.switch_samples().empty());
  EXPECT_EQ(gate.switch_latency(), latency_summary{});
}

/// The first job to ask owns the device until it departs; counts the refusals.
class owner_policy final : public schedule::policy {
 public:
  [[nodiscard]] std::string_view name() const override { return "owner"; }
  void on_departure(memory::job_id job, double) override {
    if (owner_ == job) owner_.reset();
  }
  decision may_start(memory::job_id job, double) override {
    if (!owner_) owner_ = job;
    if (*owner_ == job) return decision::start();
    ++refusals_;
    return decision::wait_for_event();
  }
  [[nodiscard]] int refusals() const { return refusals_.load(); }

 private:
  std::optional<memory::job_id> owner_;
  std::atomic<int> refusals_{0};
};

TEST_F(PolicyGate, OneSampleForTheStartAnotherJobsDepartureAllows) {
  owner_policy policy;
  policy_gate gate(policy, pool_, 2);
  const auto a = pool_.add_job("a");
  const auto b = pool_.add_job("b");
  gate.arrive(job_info::make(a, "a", 0, 1));
  gate.arrive(job_info::make(b, "b", 0, 1));
  gate.wait_for_start(a);  // a owns the device; its own start is no switch
  std::thread waiter([&] { gate.wait_for_start(b); });
  while (policy.refusals() == 0) std::this_thread::sleep_for(1ms);  // b is waiting
  // An iteration end that lets no one start is no switch either: b asks again and waits.
  gate.finish_iteration(a, {0, 0, 0, {}, {}});
  while (policy.refusals() < 2) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(gate.switch_samples().empty());
  const double departed_at = gate.now();
  gate.depart(a);
  waiter.join();
  const auto samples = gate.switch_samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_GE(samples[0], 0.0);
  EXPECT_LE(samples[0], gate.now() - departed_at);
  gate.finish_iteration(b, {0, 0, 0, {}, {}});
  EXPECT_GE(gate.wait_for_start(b), 0.0);  // after its own iteration: no wait, no sample
  EXPECT_EQ(gate.switch_samples().size(), 1u);
  gate.depart(b);
}

}  // namespace
}  // namespace tandem::runtime
