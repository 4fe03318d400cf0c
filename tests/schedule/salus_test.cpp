// Salus's disciplines (srtf, pack, fair) over lanes: probes, admission, preemption at iteration
// boundaries, fair device time, and the budget as a randomized property, driven in virtual time
// by a small driver that follows the policy contract (ask every waiting job after every event).

#include "tandem/schedule/salus.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/schedule/registry.hpp"

namespace tandem::schedule {
namespace {

/// An iteration from `start_s` to `end_s` that holds `need.persistent` throughout and takes
/// `need.ephemeral` more while it runs.
iteration_report report(double start_s, double end_s, memory_need need) {
  iteration_report r;
  r.start_s = start_s;
  r.end_s = end_s;
  r.peak_bytes = need.persistent + need.ephemeral;
  r.held.held_at_start = need.persistent;
  r.held.duration_s = end_s - start_s;
  const auto e = static_cast<std::int64_t>(need.ephemeral);
  r.held.steps = {{0, e}, {end_s - start_s, -e}};
  return r;
}

job_info known(job_id id, const std::string& name, double at, std::int64_t iterations,
               memory_need need) {
  auto info = job_info::make(id, name, at, iterations);
  info.need = need;
  return info;
}

memory_need mib(std::size_t persistent, std::size_t ephemeral) {
  return {persistent * MiB, ephemeral * MiB};
}

bool starts(policy& p, job_id job, double now) {
  if (p.may_start(job, now) != decision::start()) return false;
  p.on_iteration_start(job, now);
  return true;
}

double statistic(const std::vector<policy_statistic>& stats, const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) return s.value;
  }
  ADD_FAILURE() << "no statistic " << name;
  return -1;
}

// A job for the virtual-time driver.
struct test_job {
  job_id id = 0;
  double arrival_s = 0;
  std::int64_t iterations = 1;
  double iteration_s = 1;
  memory_need need;
  bool need_known = true;
};

struct outcome {
  std::map<job_id, double> end_s;
  std::map<job_id, double> first_start_s;
  std::size_t most_committed = 0;     // built jobs' persistent + running iterations' ephemeral
  std::vector<job_id> out_of_memory;  // probes that did not fit beside what the others held
  bool stalled = false;
  std::vector<job_id> starts;  // in order
};

/// Runs `jobs` to completion (or `until_s`) under `p`, asking every waiting job after every event
/// as the runtime's gate and the simulator do. A probe (the first iteration of a job whose need
/// was not given) that starts beyond `budget` runs out of memory and leaves, as the executors
/// fail it: nothing it waited for would return any.
outcome drive(policy& p, const std::vector<test_job>& jobs, double until_s = 1e9,
              std::size_t budget = std::numeric_limits<std::size_t>::max()) {
  outcome out;
  std::map<job_id, const test_job*> arrived;
  std::map<job_id, double> running;  // id -> end time
  std::map<job_id, std::int64_t> done;
  std::map<job_id, bool> built;
  std::size_t next_arrival = 0;
  std::vector<const test_job*> order;
  for (const auto& j : jobs) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(), [](const test_job* a, const test_job* b) {
    return a->arrival_s < b->arrival_s;
  });
  double now = 0;
  for (;;) {
    for (; next_arrival < order.size() && order[next_arrival]->arrival_s <= now; ++next_arrival) {
      const test_job& j = *order[next_arrival];
      auto info = job_info::make(j.id, "job" + std::to_string(j.id), now, j.iterations);
      if (j.need_known) info.need = j.need;
      p.on_arrival(info, now);
      arrived[j.id] = &j;
    }
    for (bool started = true; started;) {
      started = false;
      std::vector<job_id> failed;
      for (const auto& [id, j] : arrived) {
        if (running.contains(id) || !starts(p, id, now)) continue;
        running[id] = now + j->iteration_s;
        built[id] = true;
        out.first_start_s.try_emplace(id, now);
        out.starts.push_back(id);
        started = true;
        std::size_t committed = 0;
        for (const auto& [other, is_built] : built) committed += arrived[other]->need.persistent;
        for (const auto& [other, end] : running) committed += arrived[other]->need.ephemeral;
        if (committed > budget && !j->need_known && done[id] == 0) {
          failed.push_back(id);
        } else {
          out.most_committed = std::max(out.most_committed, committed);
        }
      }
      for (const auto id : failed) {
        p.on_departure(id, now);
        arrived.erase(id);
        built.erase(id);
        running.erase(id);
        out.out_of_memory.push_back(id);
      }
    }
    double next = std::numeric_limits<double>::infinity();
    if (next_arrival < order.size()) next = order[next_arrival]->arrival_s;
    for (const auto& [id, end] : running) next = std::min(next, end);
    if (std::isinf(next)) {
      out.stalled = !arrived.empty();
      return out;
    }
    if (next > until_s) return out;
    now = next;
    for (auto it = running.begin(); it != running.end();) {
      if (it->second > now) {
        ++it;
        continue;
      }
      const auto id = it->first;
      const test_job& j = *arrived[id];
      p.on_iteration_end(id, report(now - j.iteration_s, now, j.need), now);
      it = running.erase(it);
      if (++done[id] == j.iterations) {
        p.on_departure(id, now);
        arrived.erase(id);
        built.erase(id);
        out.end_s[id] = now;
      }
    }
  }
}

TEST(Salus, TheRegistryMakesEachDisciplineAndFifoIsTheExclusiveBaseline) {
  const policy_context context{100 * MiB, 2, {}};
  for (const std::string name : {"srtf", "pack", "fair"}) {
    EXPECT_EQ(make_policy(name, context)->name(), name);
  }
  EXPECT_EQ(make_policy("fifo", context)->name(), "fifo");
}

TEST(Salus, AJobOfUnknownNeedIsMeasuredAloneThenGetsALane) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  p.on_arrival(job_info::make(1, "a", 0, 5), 0);
  p.on_arrival(job_info::make(2, "b", 0, 5), 0);
  ASSERT_TRUE(starts(p, 1, 0));  // a probes
  EXPECT_EQ(p.may_start(2, 0), decision::wait_for_event());
  EXPECT_NE(p.waiting_reason(2), "");
  p.on_iteration_end(1, report(0, 1, mib(10, 20)), 1);
  EXPECT_EQ(p.lanes().lane_of(1), 0U);
  // b's probe goes before a's next iteration: a waits at the boundary.
  EXPECT_EQ(p.may_start(1, 1), decision::wait_for_event());
  ASSERT_TRUE(starts(p, 2, 1));
  p.on_iteration_end(2, report(1, 2, mib(10, 30)), 2);
  // Two lanes (10 + 10 + 20 + 30 <= 100): both run at once from now on.
  EXPECT_EQ(p.lanes().lanes().size(), 2U);
  EXPECT_TRUE(starts(p, 1, 2));
  EXPECT_TRUE(starts(p, 2, 2));
  EXPECT_EQ(statistic(p.system_statistics(), "probes"), 2);
}

TEST(Salus, AJobWithTheSignatureOfAMeasuredOneNeedsNoProbe) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  auto a = job_info::make(1, "a", 0, 5);
  a.signature = "mlp b8";
  p.on_arrival(a, 0);
  ASSERT_TRUE(starts(p, 1, 0));
  p.on_iteration_end(1, report(0, 1, mib(10, 20)), 1);
  auto b = job_info::make(2, "b", 1, 5);
  b.signature = "mlp b8";
  p.on_arrival(b, 1);
  EXPECT_TRUE(p.lanes().lane_of(2).has_value());
  EXPECT_TRUE(starts(p, 2, 1));
  EXPECT_TRUE(starts(p, 1, 1));
  EXPECT_EQ(statistic(p.system_statistics(), "probes"), 1);
}

// Regression (issue 15): a job whose need was given and whose report carried no memory curve
// left its signature's figures at zero, and a twin then started beside it needing nothing.
TEST(Salus, ATwinOfAJobWhoseNeedWasGivenInheritsThatNeed) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  auto a = known(1, "a", 0, 5, mib(30, 50));
  a.signature = "mlp b8";
  p.on_arrival(a, 0);
  ASSERT_TRUE(starts(p, 1, 0));
  iteration_report unmeasured;  // no held curve: the need stays the given one
  unmeasured.start_s = 0;
  unmeasured.end_s = 1;
  p.on_iteration_end(1, unmeasured, 1);
  auto b = job_info::make(2, "b", 1, 5);
  b.signature = "mlp b8";
  p.on_arrival(b, 1);
  // 30 + 30 persistent and a lane of 50 exceed 100 beside a's lane: b waits for a lane.
  EXPECT_FALSE(p.lanes().lane_of(2).has_value());
  EXPECT_TRUE(starts(p, 1, 1));
  EXPECT_FALSE(starts(p, 2, 1));
  EXPECT_NE(p.waiting_reason(2).find("30.00 MiB persistent + 50.00 MiB"), std::string::npos)
      << p.waiting_reason(2);
}

TEST(Salus, IdenticalJobsArrivingTogetherAreProbedOnce) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  for (job_id id = 1; id <= 3; ++id) {
    auto info = job_info::make(id, "trial" + std::to_string(id), 0, 5);
    info.signature = "resnet20 b16";
    p.on_arrival(info, 0);
  }
  ASSERT_TRUE(starts(p, 1, 0));
  // The others wait for the probe's figures rather than probing themselves.
  EXPECT_FALSE(starts(p, 2, 0));
  EXPECT_FALSE(starts(p, 3, 0));
  p.on_iteration_end(1, report(0, 1, mib(10, 20)), 1);
  // 30 persistent + 3 lanes of 20 = 90 <= 100: each its own lane, all at once.
  EXPECT_EQ(p.lanes().lanes().size(), 3U);
  EXPECT_TRUE(starts(p, 2, 1));
  EXPECT_TRUE(starts(p, 3, 1));
  EXPECT_TRUE(starts(p, 1, 1));
  EXPECT_EQ(statistic(p.system_statistics(), "probes"), 1);
}

TEST(Salus, PackRunsLanesAtOnceAndALanesFirstJobUntilItLeaves) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  p.on_arrival(known(1, "a", 0, 2, mib(10, 40)), 0);
  p.on_arrival(known(2, "b", 0, 2, mib(10, 30)), 0);
  // A third lane: 30 + 40 + 30 + 20 = 120 > 100. Best fit: b's lane (30). 30 + 70 <= 100.
  p.on_arrival(known(3, "c", 0, 2, mib(10, 20)), 0);
  EXPECT_EQ(p.lanes().lane_of(3), p.lanes().lane_of(2));
  EXPECT_TRUE(starts(p, 1, 0));
  EXPECT_TRUE(starts(p, 2, 0));
  EXPECT_FALSE(starts(p, 3, 0));
  p.on_iteration_end(2, report(0, 1, mib(10, 30)), 1);
  // c asks first, but b came first into the lane and keeps it until it leaves.
  EXPECT_FALSE(starts(p, 3, 1));
  EXPECT_TRUE(starts(p, 2, 1));
  p.on_iteration_end(2, report(1, 2, mib(10, 30)), 2);
  p.on_departure(2, 2);
  EXPECT_TRUE(starts(p, 3, 2));
}

TEST(Salus, SrtfPreemptsALongJobForAShorterArrivalAtTheNextIterationBoundary) {
  salus_policy p(100 * MiB, salus_discipline::srtf);
  p.on_arrival(known(1, "long", 0, 100, mib(20, 40)), 0);
  ASSERT_TRUE(starts(p, 1, 0));
  p.on_iteration_end(1, report(0, 1, mib(20, 40)), 1);
  ASSERT_TRUE(starts(p, 1, 1));
  // A short job arrives in the middle of the long one's second iteration: nothing is cut short.
  p.on_arrival(known(2, "short", 1.5, 5, mib(20, 30)), 1.5);
  EXPECT_FALSE(starts(p, 2, 1.5));
  p.on_iteration_end(1, report(1, 2, mib(20, 40)), 2);
  // At the boundary the newcomer (time per iteration not measured yet) goes first...
  EXPECT_FALSE(starts(p, 1, 2));
  ASSERT_TRUE(starts(p, 2, 2));
  p.on_iteration_end(2, report(2, 2.5, mib(20, 30)), 2.5);
  // ... and, measured at 0.5 s x 4 left = 2 s against 1 s x 98 left, runs to its end.
  for (int i = 0; i < 4; ++i) {
    const double t = 2.5 + 0.5 * i;
    EXPECT_FALSE(starts(p, 1, t));
    ASSERT_TRUE(starts(p, 2, t));
    p.on_iteration_end(2, report(t, t + 0.5, mib(20, 30)), t + 0.5);
  }
  p.on_departure(2, 4.5);
  EXPECT_TRUE(starts(p, 1, 4.5));
  EXPECT_EQ(statistic(p.job_statistics(1), "preemptions"), 1);
  EXPECT_EQ(p.lanes().lanes().size(), 1U);
}

TEST(Salus, SrtfServesTheShortestRemainingFirstOverATrace) {
  salus_policy p(100 * MiB, salus_discipline::srtf);
  const auto need = mib(10, 20);
  const auto out = drive(p, {{1, 0, 50, 1.0, need},
                             {2, 5.5, 10, 0.5, need},
                             {3, 6.5, 4, 0.5, need},
                             {4, 30, 3, 1.0, need}});
  ASSERT_FALSE(out.stalled);
  // 3 arrives while 2 runs and is shorter (2 s against 2's 4.5 s left): it finishes first.
  EXPECT_LT(out.end_s.at(3), out.end_s.at(2));
  EXPECT_LT(out.end_s.at(2), out.end_s.at(1));
  EXPECT_LT(out.end_s.at(4), out.end_s.at(1));
  // One iteration at a time: the total is the sum of the work.
  EXPECT_DOUBLE_EQ(out.end_s.at(1), 50 + 5 + 2 + 3);
}

TEST(Salus, FairEqualizesDeviceTimeAmongTheJobsOfALane) {
  salus_policy p(100 * MiB, salus_discipline::fair);
  // Each ephemeral need is 60: one lane only (10 + 10 + 60 + 60 > 100), shared by all three.
  const auto need = mib(10, 60);
  const auto out =
      drive(p, {{1, 0, 1000, 1.0, need}, {2, 0, 1000, 0.5, need}, {3, 0, 1000, 0.25, need}}, 60);
  ASSERT_EQ(p.lanes().lanes().size(), 1U);
  const double a = statistic(p.job_statistics(1), "service_s");
  const double b = statistic(p.job_statistics(2), "service_s");
  const double c = statistic(p.job_statistics(3), "service_s");
  EXPECT_GT(a + b + c, 58);
  // Within one iteration of the longest job: whoever is behind goes next.
  EXPECT_NEAR(a, b, 1.0);
  EXPECT_NEAR(b, c, 1.0);
  EXPECT_NEAR(a, c, 1.0);
}

TEST(Salus, AdmissionRefusesAJobWhosePersistentMemoryCannotFitAndAdmitsItWhenMemoryFrees) {
  for (const auto discipline :
       {salus_discipline::srtf, salus_discipline::pack, salus_discipline::fair}) {
    salus_policy p(100 * MiB, discipline);
    p.on_arrival(known(1, "big", 0, 10, mib(60, 20)), 0);
    ASSERT_TRUE(starts(p, 1, 0));
    // 60 + 30 persistent + 20 for the lane = 110 > 100: not even sharing a lane is safe.
    p.on_arrival(known(2, "late", 0.5, 10, mib(30, 20)), 0.5);
    EXPECT_EQ(p.may_start(2, 0.5), decision::wait_for_event());
    const std::string reason = p.waiting_reason(2);
    EXPECT_NE(reason.find("waiting for memory"), std::string::npos) << reason;
    EXPECT_NE(reason.find("30.00 MiB persistent"), std::string::npos) << reason;
    EXPECT_NE(reason.find("admitted when memory frees"), std::string::npos) << reason;
    EXPECT_FALSE(p.lanes().lane_of(2).has_value());
    p.on_iteration_end(1, report(0, 1, mib(60, 20)), 1);
    p.on_departure(1, 1);
    EXPECT_TRUE(p.lanes().lane_of(2).has_value());
    EXPECT_EQ(p.waiting_reason(2), "");
    EXPECT_TRUE(starts(p, 2, 1));
  }
}

TEST(Salus, AJobThatCanNeverFitIsRefusedWithBothNumbers) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  p.on_arrival(known(1, "huge", 0, 1, mib(80, 30)), 0);
  try {
    static_cast<void>(p.may_start(1, 0));
    FAIL() << "expected a config_error";
  } catch (const config_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("80.00 MiB persistent + 30.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("raise the budget"), std::string::npos) << message;
  }
}

TEST(Salus, AnIterationThatOutgrowsItsLaneMovesAtItsBoundary) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  p.on_arrival(known(1, "a", 0, 10, mib(10, 20)), 0);
  p.on_arrival(known(2, "b", 0, 10, mib(10, 20)), 0);
  ASSERT_TRUE(starts(p, 1, 0));
  ASSERT_TRUE(starts(p, 2, 0));
  // a took 50, not 20: it leaves its lane for one of 50 (20 + 20 + 50 <= 100).
  p.on_iteration_end(1, report(0, 1, mib(10, 50)), 1);
  EXPECT_EQ(statistic(p.job_statistics(1), "lane_moves"), 1);
  ASSERT_TRUE(p.lanes().lane_of(1).has_value());
  EXPECT_GE(p.lanes().lanes().size(), 2U);
  EXPECT_TRUE(p.lanes().safe());
}

// Regression (srtf, the 100-job trace at 8 GiB: 41 jobs failed as a stall): a probe came out
// too large for the lane and stayed outside it, holding its persistent memory. The lane's next
// job (by SRTF) then no longer fitted beside it while another member did; the job outside waited
// for that member, which was not the lane's next, and nothing ever started again.
TEST(Salus, AJobOutsideTheLanesRunsAloneWhenTheLanesNextJobCannotStart) {
  salus_policy p(100 * MiB, salus_discipline::srtf);
  test_job probed{1, 0, 3, 1.0, mib(30, 10)};
  probed.need_known = false;
  // One lane of 70 for both (5 + 5 + 70 <= 100), before the probe's 30 persistent are known:
  // then 30 + 5 + 70 > 100 for the lane's next job (job 2), while job 3 would fit (30 + 5 + 20).
  const std::vector<test_job> jobs{probed, {2, 0, 4, 1.0, mib(5, 70)}, {3, 0, 4, 1.0, mib(5, 20)}};
  const auto out = drive(p, jobs);
  ASSERT_FALSE(out.stalled);
  EXPECT_EQ(out.end_s.size(), jobs.size());
  EXPECT_LE(out.most_committed, 100 * MiB);
  // The probed job went first and ran its iterations alone, then the lane's jobs.
  ASSERT_FALSE(out.starts.empty());
  EXPECT_EQ(out.starts.front(), 1U);
  EXPECT_LT(out.end_s.at(1), out.end_s.at(2));
}

// Found by the planned VGG-16 stress under srtf and fair (2 of 20 runs each): each job's iteration
// came out a few MiB larger than its lane, so it left the lane at its boundary; once all had,
// none fitted beside the others' persistent memory by the counted figures and nothing ran
// again, so the gate failed all three. Now the one needing least runs alone (the pool keeps the
// budget hard; its memory waits decide) rather than every job failing.
TEST(Salus, JobsThatAllOutgrewTheirLaneRunAloneRatherThanWaitForever) {
  salus_policy p(100 * MiB, salus_discipline::srtf);
  const std::vector<job_id> jobs{1, 2, 3};
  for (const auto j : jobs) p.on_arrival(known(j, "j" + std::to_string(j), 0, 10, mib(30, 10)), 0);
  // One lane of 10 for the three (90 + 10 <= 100); each runs once and comes out at 12.
  double now = 0;
  std::set<job_id> outgrew;
  for (int step = 0; step < 3; ++step) {
    const auto next = std::find_if(jobs.begin(), jobs.end(), [&](job_id j) {
      return !outgrew.contains(j) && starts(p, j, now);
    });
    ASSERT_NE(next, jobs.end()) << "a job of the lane starts";
    p.on_iteration_end(*next, report(now, now + 1, mib(30, 12)), now + 1);
    now += 1;
    outgrew.insert(*next);
  }
  EXPECT_TRUE(p.lanes().lanes().empty()) << "90 + 12 > 100: no lane for any of them";
  // Nothing runs; the one needing least goes alone, each time another ends.
  for (int step = 0; step < 3; ++step) {
    const auto next =
        std::find_if(jobs.begin(), jobs.end(), [&](job_id j) { return starts(p, j, now); });
    ASSERT_NE(next, jobs.end()) << "step " << step << ": every job waits, and none runs";
    for (const auto other : jobs) {
      if (other != *next) {
        EXPECT_FALSE(starts(p, other, now)) << "it runs alone";
      }
    }
    p.on_iteration_end(*next, report(now, now + 1, mib(30, 12)), now + 1);
    now += 1;
  }
}

// Found by random traces with probes: a probe on an empty device may still come out too large
// for the lanes admitted before it, and stays outside them. Jobs built in those lanes beside it
// then left room for neither the lane's next job nor the job outside alone, while another member
// of the lane would fit: nothing started again.
TEST(Salus, ALaneMemberThatFitsGoesOutOfTurnWhenNothingElseCanStart) {
  salus_policy p(100 * MiB, salus_discipline::srtf);
  test_job probed{4, 0.5, 2, 1.0, mib(30, 45)};
  probed.need_known = false;
  // Jobs 2 and 3 wait for the first (30 + 30 + 70 > 100), then share a lane of 20 (30 + 30 + 20)
  // and the probe comes out outside it (+ 30). Once job 2 is built, job 3 (its time unknown:
  // the lane's next by SRTF) needs 30 + 30 + 30 + 20 = 110, the probed job alone 90 + 45 = 135,
  // while job 2 needs 90 + 10.
  const std::vector<test_job> jobs{{1, 0, 2, 1.0, mib(30, 70)},
                                   {2, 0.1, 2, 1.0, mib(30, 10)},
                                   {3, 0.2, 2, 1.0, mib(30, 20)},
                                   probed};
  const auto out = drive(p, jobs);
  ASSERT_FALSE(out.stalled);
  EXPECT_EQ(out.end_s.size(), jobs.size());
  EXPECT_LE(out.most_committed, 100 * MiB);
}

TEST(Salus, AnInferenceRequestGoesBeforeTrainingInItsLane) {
  salus_policy p(90 * MiB, salus_discipline::pack);
  p.on_arrival(known(1, "train", 0, 10, mib(10, 60)), 0);
  auto serve = known(2, "serve", 0, 10, mib(10, 20));
  serve.inference = true;
  p.on_arrival(serve, 0);  // 20 + 60 + 20 > 90: it shares the training job's lane
  ASSERT_EQ(p.lanes().lane_of(1), p.lanes().lane_of(2));
  ASSERT_TRUE(starts(p, 1, 0));
  EXPECT_FALSE(starts(p, 2, 0.1));  // a request waits for the running iteration
  p.on_iteration_end(1, report(0, 1, mib(10, 60)), 1);
  EXPECT_FALSE(starts(p, 1, 1));
  ASSERT_TRUE(starts(p, 2, 1));
  p.on_iteration_end(2, report(1, 1.1, mib(10, 20)), 1.1);
  // No request waits: the idle inference job does not hold the lane.
  EXPECT_TRUE(starts(p, 1, 1.1));
}

/// A footprint variant that holds `need.persistent` between iterations and takes
/// `need.ephemeral` more over an iteration of `seconds`.
footprint_variant variant(const std::string& label, memory_need need, double seconds) {
  footprint_variant v;
  v.label = label;
  v.held.held_at_start = need.persistent;
  v.held.duration_s = seconds;
  const auto e = static_cast<std::int64_t>(need.ephemeral);
  v.held.steps = {{0, e}, {seconds, -e}};
  v.iteration_s = seconds;
  return v;
}

/// The plain iteration and one plan that lowers its ephemeral need to `planned_ephemeral` MiB.
std::vector<footprint_variant> plain_and_plan(memory_need plain, std::size_t planned_ephemeral) {
  return {variant("none", plain, 1),
          variant("plan", {plain.persistent, planned_ephemeral * MiB}, 1.3)};
}

TEST(Salus, AJobThatWouldWaitPlainIsAdmittedUnderAPlanThatFits) {
  for (const auto discipline : {salus_discipline::pack, salus_discipline::fair}) {
    salus_policy p(100 * MiB, discipline);
    p.on_arrival(known(1, "first", 0, 10, mib(50, 20)), 0);
    ASSERT_TRUE(starts(p, 1, 0));
    EXPECT_EQ(p.chosen_variant(1), 0U);  // admitted plain: runs plain
    // Plain: a lane of 45 beside 60 persistent and 20 of lanes is 125; even growing the first
    // lane to 45 is 105 > 100. Under the plan (15 per iteration) a lane of its own fits: 95.
    p.on_arrival(known(2, "second", 0.5, 10, mib(10, 45)), 0.5);
    p.offer_variants(2, plain_and_plan(mib(10, 45), 15));
    ASSERT_TRUE(p.lanes().lane_of(2).has_value());
    EXPECT_NE(p.lanes().lane_of(2), p.lanes().lane_of(1));
    ASSERT_TRUE(starts(p, 2, 0.5));
    EXPECT_EQ(p.chosen_variant(2), 1U);
    EXPECT_TRUE(p.lanes().safe());
    // Every iteration while it holds that lane runs under the plan; the first job stays plain.
    p.on_iteration_end(2, report(0.5, 1.8, mib(10, 15)), 1.8);
    ASSERT_TRUE(starts(p, 2, 1.8));
    EXPECT_EQ(p.chosen_variant(2), 1U);
    p.on_iteration_end(1, report(0, 2, mib(50, 20)), 2);
    ASSERT_TRUE(starts(p, 1, 2));
    EXPECT_EQ(p.chosen_variant(1), 0U);
    EXPECT_EQ(statistic(p.job_statistics(2), "planned"), 2);
    EXPECT_EQ(statistic(p.job_statistics(2), "plan_admissions"), 1);
    EXPECT_EQ(statistic(p.job_statistics(1), "planned"), 0);
    EXPECT_EQ(statistic(p.system_statistics(), "plan_admissions"), 1);
    EXPECT_EQ(statistic(p.system_statistics(), "planned"), 2);
    // Offered right after its arrival, the plan admitted it before it ever waited.
    EXPECT_EQ(statistic(p.system_statistics(), "admission_refusals"), 0);
  }
}

TEST(Salus, WithoutAnOfferTheSameJobWaitsAsBefore) {
  for (const bool offer_plain_only : {false, true}) {
    salus_policy p(100 * MiB, salus_discipline::pack);
    p.on_arrival(known(1, "first", 0, 10, mib(50, 20)), 0);
    ASSERT_TRUE(starts(p, 1, 0));
    p.on_arrival(known(2, "second", 0.5, 10, mib(10, 45)), 0.5);
    // Only the plain iteration offered is no choice at all.
    if (offer_plain_only) p.offer_variants(2, {variant("none", mib(10, 45), 1)});
    EXPECT_EQ(p.may_start(2, 0.5), decision::wait_for_event());
    EXPECT_FALSE(p.lanes().lane_of(2).has_value());
    EXPECT_EQ(p.chosen_variant(2), 0U);
    EXPECT_NE(p.waiting_reason(2).find("waiting for memory"), std::string::npos);
    EXPECT_EQ(statistic(p.system_statistics(), "admission_refusals"), 1);
    EXPECT_EQ(statistic(p.system_statistics(), "plan_admissions"), 0);
    p.on_iteration_end(1, report(0, 1, mib(50, 20)), 1);
    p.on_departure(1, 1);
    ASSERT_TRUE(starts(p, 2, 1));
    EXPECT_EQ(p.chosen_variant(2), 0U);
    EXPECT_EQ(statistic(p.job_statistics(2), "planned"), 0);
  }
}

TEST(Salus, AJobTooLargePlainForTheBudgetRunsUnderAPlanInsteadOfBeingRefused) {
  for (const auto discipline :
       {salus_discipline::srtf, salus_discipline::pack, salus_discipline::fair}) {
    salus_policy p(100 * MiB, discipline);
    // 80 + 30 > 100 on its own: without plans a config_error (AJobThatCanNeverFit... above).
    p.on_arrival(known(1, "huge", 0, 3, mib(80, 30)), 0);
    p.offer_variants(1, plain_and_plan(mib(80, 30), 15));
    ASSERT_TRUE(p.lanes().lane_of(1).has_value());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(starts(p, 1, i)) << to_string(discipline);
      EXPECT_EQ(p.chosen_variant(1), 1U);
      p.on_iteration_end(1, report(i, i + 1, mib(80, 15)), i + 1);
    }
    EXPECT_EQ(statistic(p.job_statistics(1), "planned"), 3);
    EXPECT_EQ(statistic(p.job_statistics(1), "plan_admissions"), 1);
    p.on_departure(1, 3);
  }
}

TEST(Salus, APlansMeasuredNeedIsItsOwnAndSizesItsLane) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  p.on_arrival(known(1, "first", 0, 10, mib(50, 20)), 0);
  ASSERT_TRUE(starts(p, 1, 0));
  p.on_arrival(known(2, "second", 0.5, 10, mib(10, 45)), 0.5);
  p.offer_variants(2, plain_and_plan(mib(10, 45), 15));
  ASSERT_TRUE(starts(p, 2, 0.5));
  ASSERT_EQ(p.chosen_variant(2), 1U);
  // Its planned iteration took 18, more than the predicted 15: its lane grows at the boundary,
  // still under the plan (plain's 45 is still too much beside the first job).
  p.on_iteration_end(2, report(0.5, 1.8, mib(10, 18)), 1.8);
  ASSERT_TRUE(p.lanes().lane_of(2).has_value());
  EXPECT_GE(p.lanes().lane_holding(2)->size, 18 * MiB);
  ASSERT_TRUE(starts(p, 2, 1.8));
  EXPECT_EQ(p.chosen_variant(2), 1U);
  EXPECT_TRUE(p.lanes().safe());
}

TEST(Salus, AProbeTooLargePlainRunsTheFirstPlanThatFits) {
  salus_policy p(100 * MiB, salus_discipline::pack);
  p.on_arrival(job_info::make(1, "unknown", 0, 2), 0);  // need unknown: probed
  p.offer_variants(1, {variant("none", mib(70, 40), 1), variant("a", mib(70, 35), 1.1),
                       variant("b", mib(70, 20), 1.3)});
  ASSERT_TRUE(starts(p, 1, 0));
  EXPECT_EQ(p.chosen_variant(1), 2U);  // 110 and 105 exceed 100; 90 fits
  p.on_iteration_end(1, report(0, 1.3, mib(70, 20)), 1.3);
  // Measured under plan b; plain's 40 is the offer's: admitted under b, not refused.
  ASSERT_TRUE(p.lanes().lane_of(1).has_value());
  ASSERT_TRUE(starts(p, 1, 1.3));
  EXPECT_EQ(p.chosen_variant(1), 2U);
  EXPECT_EQ(statistic(p.job_statistics(1), "planned"), 2);
}

/// Job `i` of a random trace (ids from 1), arriving up to 3 s after the one before (`at`): up to
/// 60 MiB persistent, 150 MiB ephemeral, 1 to 12 iterations of 0.1 to 1.5 s.
test_job random_job(std::mt19937_64& random, int i, double& at) {
  std::uniform_int_distribution<std::size_t> persistent(1, 60);
  std::uniform_int_distribution<std::size_t> ephemeral(1, 150);
  at += std::uniform_real_distribution<double>(0, 3)(random);
  test_job j;
  j.id = static_cast<job_id>(i + 1);
  j.arrival_s = at;
  j.iterations = 1 + static_cast<std::int64_t>(random() % 12);
  j.iteration_s = std::uniform_real_distribution<double>(0.1, 1.5)(random);
  j.need = mib(persistent(random), ephemeral(random));
  return j;
}

TEST(Salus, RandomTracesNeverPromiseTheBudgetTwiceAndEveryJobFinishes) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 150; ++trial) {
    const auto discipline = static_cast<salus_discipline>(trial % 3);
    const std::size_t budget = 256 * MiB;
    std::vector<test_job> jobs;
    const int count = 2 + static_cast<int>(random() % 10);
    double at = 0;
    for (int i = 0; i < count; ++i) jobs.push_back(random_job(random, i, at));
    salus_policy p(budget, discipline);
    const auto out = drive(p, jobs);
    ASSERT_FALSE(out.stalled) << "trial " << trial;
    EXPECT_EQ(out.end_s.size(), jobs.size()) << "trial " << trial;
    EXPECT_LE(out.most_committed, budget) << "trial " << trial;
    EXPECT_TRUE(p.lanes().lanes().empty() || p.lanes().safe()) << "trial " << trial;
  }
}

// As above with a third of the jobs of unknown need (probes) and budgets from 100 to 300 MiB:
// probes that came out larger than any need seen, beside lanes admitted before them, left every
// job waiting (stalls). A probe runs beside the persistent memory others hold, its need unknown
// until it has run: one that does not fit is failed by this test's driver (the policy's bet: see
// probe_may_go; policy_driver restarts it instead), and every other job still finishes within the
// budget.
TEST(Salus, RandomTracesWithProbesNeverStallAndEveryJobThatFitsFinishes) {
  std::mt19937_64 random(11);
  for (int trial = 0; trial < 600; ++trial) {
    const auto discipline = static_cast<salus_discipline>(trial % 3);
    const std::size_t budget = (100 + random() % 200) * MiB;
    std::vector<test_job> jobs;
    const int count = 2 + static_cast<int>(random() % 10);
    double at = 0;
    for (int i = 0; i < count; ++i) {
      auto j = random_job(random, i, at);
      // Every job fits the budget on its own: one that does not is refused, not tested here.
      j.need.ephemeral = std::min(j.need.ephemeral, budget - j.need.persistent);
      j.need_known = random() % 3 != 0;
      jobs.push_back(j);
    }
    salus_policy p(budget, discipline);
    const auto out = drive(p, jobs, 1e9, budget);
    ASSERT_FALSE(out.stalled) << "trial " << trial;
    EXPECT_EQ(out.end_s.size() + out.out_of_memory.size(), jobs.size()) << "trial " << trial;
    EXPECT_LE(out.most_committed, budget) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tandem::schedule
