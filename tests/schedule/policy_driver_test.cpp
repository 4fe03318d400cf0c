// The policy driver's memory waits: who waits, who restarts its iteration and who gives up when
// running iterations wait for each other (policy_driver.hpp, "Memory waits").

#include "tandem/schedule/policy_driver.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tandem/schedule/group_gating.hpp"

namespace tandem::schedule {
namespace {

using verdict = memory_wait_verdict;

class fixed_clock final : public driver_clock {
 public:
  [[nodiscard]] double now() const override { return now_s; }
  double now_s = 0;
};

/// Lets every iteration start; keeps the reports it is given.
class always_start final : public policy {
 public:
  [[nodiscard]] std::string_view name() const override { return "always"; }
  [[nodiscard]] decision may_start(job_id, double) override { return decision::start(); }
  void on_iteration_end(job_id job, const iteration_report& report, double) override {
    ends.push_back({job, report.restarted, report.held.peak()});
  }
  struct end {
    job_id job;
    bool restarted;
    std::size_t peak_held;
  };
  std::vector<end> ends;
};

/// Jobs 1 and 2 arrived and running an iteration each.
struct two_running {
  two_running() {
    for (job_id job : {1u, 2u}) {
      driver.arrive(job_info::make(job, "j", 0));
      driver.request_start(job);
    }
    static_cast<void>(driver.take_grants());
  }
  always_start policy;
  fixed_clock clock;
  policy_driver driver{policy, clock, 2};
};

TEST(PolicyDriverMemoryWaits, AWaitIsWorthItWhileAnotherIterationRuns) {
  two_running run;
  EXPECT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(1, false), verdict::keep_waiting);
}

TEST(PolicyDriverMemoryWaits, WhenBothWaitTheLatestToWaitRestarts) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);  // 2 runs
  EXPECT_EQ(run.driver.memory_wait(2, true), verdict::restart_iteration);
  // 2 lets go: its regions are coming back, so 1 waits for them.
  EXPECT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
}

TEST(PolicyDriverMemoryWaits, OneThatCanRestartLetsGoBeforeALaterOneThatCannot) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  // 2, in its backward pass say, waits last but cannot restart: 1 lets go.
  EXPECT_EQ(run.driver.memory_wait(2, false), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(1, true), verdict::restart_iteration);
}

TEST(PolicyDriverMemoryWaits, WhenNoneCanRestartTheLatestToWaitGivesUp) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, false), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(2, false), verdict::give_up);
  // Until 2 has left, its regions are coming back: 1 waits for them rather than fail too.
  EXPECT_EQ(run.driver.memory_wait(1, false), verdict::keep_waiting);
  run.driver.depart(2);
  EXPECT_EQ(run.driver.memory_wait(1, false), verdict::give_up);  // alone now
}

// A give-up that another class's free block serves fails nobody: the job goes on, and the
// others are not told to wait for regions that will not come back.
TEST(PolicyDriverMemoryWaits, AGiveUpThatFallsBackLeavesNothingForTheOthersToWaitFor) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, false), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(2, false, 2 << 20, 0, false, true), verdict::give_up);
  EXPECT_EQ(run.driver.held_up_by(2), "");
  // 2 runs on: 1 waits for it, as for any running iteration, and is the one to give up once 2
  // waits too.
  EXPECT_EQ(run.driver.memory_wait(1, false), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(2, false), verdict::give_up);
  EXPECT_NE(run.driver.held_up_by(2).find("failing"), std::string::npos);
}

// A job that can make room in its own memory (a planned job's executor) does so where nothing
// else would serve, before anyone lets go: a copy of its own costs less than a restart, and a
// failure nothing. Asked again with no room left to make, the usual choice applies.
TEST(PolicyDriverMemoryWaits, WhereNothingMovesOneThatCanMakeRoomMakesRoomInsteadOfFailing) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, false), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(2, false, 100, 0, true), verdict::make_room);
  // Making room is no letting go: 1 is not told to wait for 2's regions, and 2 fails only
  // once it can make no more room.
  EXPECT_EQ(run.driver.memory_wait(2, false, 100, 0, false), verdict::give_up);
}

TEST(PolicyDriverMemoryWaits, MakingRoomComesBeforeAnotherIterationsRestart) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(2, false, 100, 0, true), verdict::make_room);
  EXPECT_EQ(run.driver.memory_wait(2, true, 100, 0, true), verdict::make_room)
      << "even where it could restart itself";
}

TEST(PolicyDriverMemoryWaits, WhileAnotherIterationMovesAJobThatCouldMakeRoomWaits) {
  two_running run;
  EXPECT_EQ(run.driver.memory_wait(1, false, 100, 0, true), verdict::keep_waiting);
  run.driver.finish_iteration(2, {});  // 1 alone now, beside an idle job
  EXPECT_EQ(run.driver.memory_wait(1, false, 100, 0, true), verdict::make_room);
  run.driver.set_budget_schedule({{5.0, 1000}}, [](std::size_t) {});
  EXPECT_EQ(run.driver.memory_wait(1, false, 100, 0, true), verdict::keep_waiting)
      << "a budget change to come may serve without moving anything";
}

/// Starts every iteration; holds every group boundary until told (NodeGroup's barrier, where a
/// group may wait for regions another iteration holds).
class holds_groups final : public policy, public group_gating {
 public:
  [[nodiscard]] std::string_view name() const override { return "holds groups"; }
  [[nodiscard]] decision may_start(job_id, double) override { return decision::start(); }
  [[nodiscard]] std::vector<std::size_t> group_boundaries(job_id) const override { return {4}; }
  void on_group_end(job_id, std::size_t, double) override {}
  [[nodiscard]] decision may_enter_group(job_id, std::size_t, double) override {
    return open ? decision::start() : decision::wait_for_event();
  }
  void on_group_start(job_id, std::size_t, double) override {}
  [[nodiscard]] bool wants_memory_events() const override { return false; }
  bool open = false;
};

/// Jobs 1 and 2 running an iteration each; 2 waits at its first group boundary, where it can
/// restart or (`restartable` false: past its backward pass) not.
struct one_at_a_group_boundary {
  explicit one_at_a_group_boundary(bool restartable = true) {
    for (job_id job : {1u, 2u}) {
      driver.arrive(job_info::make(job, "j", 0));
      driver.request_start(job);
    }
    static_cast<void>(driver.take_grants());
    driver.request_group(2, 1, restartable);
  }
  holds_groups policy;
  fixed_clock clock;
  policy_driver driver{policy, clock, 2};
};

// Job 2 waits at a group boundary; job 1, in an operation's callback, waits for regions 2 holds
// and cannot restart. Neither moves: 2, which can restart at its boundary, lets go rather than
// 1 fail.
TEST(PolicyDriverMemoryWaits, OneWaitingAtAGroupBoundaryLetsGoBeforeOneThatCannotRestartFails) {
  one_at_a_group_boundary run;
  auto& driver = run.driver;
  EXPECT_TRUE(driver.take_grants().empty());
  EXPECT_EQ(driver.memory_wait(1, false), verdict::keep_waiting);
  EXPECT_TRUE(driver.restart_owed(2));
  EXPECT_EQ(driver.take_boundary_restarts(), std::vector<job_id>{2});
  EXPECT_TRUE(driver.take_boundary_restarts().empty()) << "told once";
  EXPECT_EQ(driver.held_up_by(2), "letting go of its iteration to run it again");
  // 1 waits for 2's regions meanwhile; 2 withdraws from its boundary and restarts.
  EXPECT_EQ(driver.memory_wait(1, false), verdict::keep_waiting);
  driver.withdraw(2);
  driver.restart_iteration(2, {});
  EXPECT_FALSE(driver.restart_owed(2));
  driver.memory_wait_ended(1);
}

// At a boundary past its restartable stretch (in its optimizer step, some weights changed) 2
// cannot let go: run again, its iteration would compute on half-updated weights. The one that
// waits for regions gives up instead (under nodegroup, once in 60 runs, a job at such a boundary
// restarted and its losses from then on differed from its solo run's).
TEST(PolicyDriverMemoryWaits, OneAtAGroupBoundaryPastItsRestartableStretchIsNeverToldToLetGo) {
  one_at_a_group_boundary run(false);
  auto& driver = run.driver;
  EXPECT_EQ(driver.memory_wait(1, false), verdict::give_up);
  EXPECT_FALSE(driver.restart_owed(2));
  EXPECT_TRUE(driver.take_boundary_restarts().empty());
}

// One waiting for regions that can restart lets go before one at a group boundary: both lose
// their work so far, and it asked for what it could not get.
TEST(PolicyDriverMemoryWaits, ARestartableWaiterForRegionsLetsGoBeforeOneAtAGroupBoundary) {
  one_at_a_group_boundary run;
  auto& driver = run.driver;
  EXPECT_EQ(driver.memory_wait(1, true), verdict::restart_iteration);
  EXPECT_FALSE(driver.restart_owed(2));
  EXPECT_TRUE(driver.take_boundary_restarts().empty());
}

// Progress lines say what holds up a running iteration.
TEST(PolicyDriverMemoryWaits, SaysWhatHoldsUpARunningIteration) {
  two_running run;
  EXPECT_EQ(run.driver.held_up_by(1), "");
  run.clock.now_s = 1;
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  run.clock.now_s = 3.5;
  EXPECT_EQ(run.driver.held_up_by(1), "waiting for regions for 2.5 s");
  run.driver.memory_wait_ended(1);
  EXPECT_EQ(run.driver.held_up_by(1), "");
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  ASSERT_EQ(run.driver.memory_wait(2, true), verdict::restart_iteration);
  EXPECT_EQ(run.driver.held_up_by(2), "letting go of its iteration to run it again");
  run.driver.finish_iteration(1, {});
  EXPECT_EQ(run.driver.held_up_by(1), "") << "not running";
}

TEST(PolicyDriverMemoryWaits, AnIterationAloneWaitsOnlyForABudgetChangeToCome) {
  two_running run;
  run.driver.finish_iteration(1, {});  // 1 idle now
  run.driver.set_budget_schedule({{5.0, 1000}}, [](std::size_t) {});
  EXPECT_EQ(run.driver.memory_wait(2, true), verdict::keep_waiting);
}

TEST(PolicyDriverMemoryWaits, AnIterationAloneBesideIdleJobsRestartsWhileItGetsFurther) {
  {
    two_running run;
    run.driver.finish_iteration(1, {});
    EXPECT_EQ(run.driver.memory_wait(2, false), verdict::give_up);  // cannot restart
  }
  {
    two_running run;
    run.driver.depart(1);
    EXPECT_EQ(run.driver.memory_wait(2, true), verdict::give_up);  // nobody else there
  }
  two_running run;
  run.driver.finish_iteration(1, {});
  // 1's memory may go when it leaves: 2 restarts, and its report ends with what it was refused.
  ASSERT_EQ(run.driver.memory_wait(2, true, 100), verdict::restart_iteration);
  iteration_report cut;
  cut.held.held_at_start = 40;
  cut.held.duration_s = 1;
  run.driver.restart_iteration(2, cut);
  ASSERT_EQ(run.policy.ends.size(), 2u);
  EXPECT_TRUE(run.policy.ends[1].restarted);
  EXPECT_EQ(run.policy.ends[1].peak_held, 140u);
  // Further this time (1 may have shrunk): it may restart again.
  run.driver.request_start(2);
  ASSERT_EQ(run.driver.take_grants().size(), 1u);
  ASSERT_EQ(run.driver.memory_wait(2, true, 200), verdict::restart_iteration);
  run.driver.restart_iteration(2, cut);
  EXPECT_EQ(run.policy.ends.back().peak_held, 240u);
  // No further than before (140 <= 240): waiting did not help, so the next time it gives up.
  run.driver.request_start(2);
  ASSERT_EQ(run.driver.take_grants().size(), 1u);
  ASSERT_EQ(run.driver.memory_wait(2, true, 100), verdict::restart_iteration);
  run.driver.restart_iteration(2, cut);
  run.driver.request_start(2);
  ASSERT_EQ(run.driver.take_grants().size(), 1u);
  EXPECT_EQ(run.driver.memory_wait(2, true), verdict::give_up);
}

// A job alone whose own regions hold room enough, but only in pieces: its rerun lays them out
// afresh (every block of the cut iteration is freed), so it restarts rather than fail; not
// when the room is too small for the request, nor once restarting stops getting it further.
TEST(PolicyDriverMemoryWaits, AnIterationAloneWhoseRegionsHoldRoomInPiecesRestarts) {
  {
    two_running run;
    run.driver.depart(1);
    EXPECT_EQ(run.driver.memory_wait(2, true, 100, 99), verdict::give_up);  // too little room
  }
  {
    two_running run;
    run.driver.depart(1);
    EXPECT_EQ(run.driver.memory_wait(2, false, 100, 300), verdict::give_up);  // cannot restart
  }
  two_running run;
  run.driver.depart(1);
  ASSERT_EQ(run.driver.memory_wait(2, true, 100, 300), verdict::restart_iteration);
  iteration_report cut;
  cut.held.held_at_start = 40;
  cut.held.duration_s = 1;
  run.driver.restart_iteration(2, cut);
  EXPECT_TRUE(run.policy.ends.back().restarted);
  // While the restart unwinds, an operation's end callback borrows again: that refusal lets go
  // too, however little room it finds, rather than turn the owed restart into a failure.
  run.driver.request_start(2);
  ASSERT_EQ(run.driver.take_grants().size(), 1u);
  ASSERT_EQ(run.driver.memory_wait(2, true, 100, 300), verdict::restart_iteration);
  EXPECT_EQ(run.driver.memory_wait(2, true, 100, 0), verdict::restart_iteration);
  EXPECT_TRUE(run.driver.restart_owed(2));
  run.driver.restart_iteration(2, cut);
  // Its second try got no further than its first: the next refusal fails it.
  run.driver.request_start(2);
  ASSERT_EQ(run.driver.take_grants().size(), 1u);
  EXPECT_EQ(run.driver.memory_wait(2, true, 100, 300), verdict::give_up);
}

TEST(PolicyDriverMemoryWaits, ARestartEndsTheIterationAsRestartedAndTheJobStartsItAgain) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  ASSERT_EQ(run.driver.memory_wait(2, true), verdict::restart_iteration);
  run.driver.restart_iteration(2, {});
  ASSERT_EQ(run.policy.ends.size(), 1u);
  EXPECT_EQ(run.policy.ends[0].job, 2u);
  EXPECT_TRUE(run.policy.ends[0].restarted);
  run.driver.request_start(2);
  ASSERT_EQ(run.driver.take_grants().size(), 1u);
  // Running again and not waiting: job 1's wait is worth it.
  EXPECT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
}

TEST(PolicyDriverMemoryWaits, TheTimeSpentWaitingIsKeptPerJob) {
  two_running run;
  run.clock.now_s = 1;
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  run.clock.now_s = 1.5;
  // Asked again while still waiting: one wait, counted from its start.
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  EXPECT_DOUBLE_EQ(run.driver.memory_waited_s(1), 0.5);  // the wait under way counts
  run.clock.now_s = 2;
  run.driver.memory_wait_ended(1);
  run.clock.now_s = 5;
  EXPECT_DOUBLE_EQ(run.driver.memory_waited_s(1), 1.0);
  EXPECT_DOUBLE_EQ(run.driver.memory_waited_s(2), 0.0);
  // A wait that ends in a restart counts up to the verdict.
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  run.clock.now_s = 5.25;
  ASSERT_EQ(run.driver.memory_wait(2, true), verdict::restart_iteration);
  EXPECT_DOUBLE_EQ(run.driver.memory_waited_s(2), 0.0);
  run.clock.now_s = 6;
  EXPECT_DOUBLE_EQ(run.driver.memory_waited_s(1), 2.0);
}

TEST(PolicyDriverMemoryWaits, ARestartIsOwedFromItsVerdictOrAnInjectionUntilReported) {
  two_running run;
  ASSERT_EQ(run.driver.memory_wait(1, true), verdict::keep_waiting);
  EXPECT_EQ(run.driver.memory_wait(2, true), verdict::restart_iteration);
  EXPECT_TRUE(run.driver.restart_owed(2));
  EXPECT_FALSE(run.driver.restart_owed(1));
  run.driver.restart_iteration(2, {});
  EXPECT_FALSE(run.driver.restart_owed(2));
  // A give-up owes no restart.
  two_running other;
  ASSERT_EQ(other.driver.memory_wait(1, false), verdict::keep_waiting);
  ASSERT_EQ(other.driver.memory_wait(2, false), verdict::give_up);
  EXPECT_FALSE(other.driver.restart_owed(2));
  // An injected restart is owed as one judged so, and the others wait for its regions.
  other.driver.owe_restart(1);
  EXPECT_TRUE(other.driver.restart_owed(1));
  other.driver.depart(2);
  other.driver.depart(1);
  EXPECT_FALSE(other.driver.restart_owed(1));
}

/// Lets nobody start, ever: a policy bug the driver must name.
class never_start final : public policy {
 public:
  [[nodiscard]] std::string_view name() const override { return "never"; }
  [[nodiscard]] decision may_start(job_id, double) override { return decision::wait_for_event(); }
};

TEST(PolicyDriverStall, EveryJobWaitingForNoEventIsAStallNamedInOneShortLine) {
  never_start policy;
  fixed_clock clock;
  policy_driver driver{policy, clock, 8};
  for (job_id job = 1; job <= 8; ++job) {
    EXPECT_FALSE(driver.stalled());  // a job still to arrive is an event to come
    driver.arrive(job_info::make(job, "j" + std::to_string(job), 0));
    driver.request_start(job);
  }
  ASSERT_TRUE(driver.stalled());
  // Each stalled job reports the message: six names and a count, not all eight.
  const auto message = driver.stall_message([](job_id job) { return "j" + std::to_string(job); });
  EXPECT_NE(message.find("policy 'never' left every job (j1, j2, j3, j4, j5, j6 and 2 more)"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace tandem::schedule
