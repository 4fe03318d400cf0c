#pragma once
// Which node groups run together between two barriers: Waterwave's pairing (Algorithm 1),
// generalized to N jobs and S streams and decided step by step from the jobs' real state.
//
// Waterwave pairs one job's allocating groups (ANGs) with another's freeing groups (DNGs), two
// streams, a barrier between consecutive pairs, so that memory one job frees in a pair flows to
// the other's allocations in the next. Its Algorithm 1 lays out a whole round in advance and lets
// the second job start p = (limit - peak) / split - 1 ANGs early. Here a step is chosen at each
// barrier from where the jobs really are:
//   - candidates: each job waiting at a group boundary, its next group; freeing groups first (they
//     make room), then allocating ones; within each, the job furthest through its iteration
//     (as a share of its groups) first (the pipeline's leader finishes first), then jobs at their
//     iteration's start by turn (the one that started an iteration least recently first), then in
//     Algorithm 1's order (more groups first);
//   - a job at its iteration's start that does not fit now, but would once the jobs mid-iteration
//     finish theirs, is not overtaken: no job with a later turn starts an iteration in the same
//     step (with three jobs or more, those out of phase would otherwise always hold the room it
//     waits for), unless the step would then be empty;
//   - a candidate joins the step while there is a stream for it, while every chosen group can
//     reach its peak at once beside what everybody holds (frees count only after the barrier,
//     which is Algorithm 1's "- 1": the DNG must finish before its memory serves the next ANG),
//     and while the jobs that are mid-iteration after the step could still all finish, one
//     after another, each with what the earlier ones give back (a banker's check), so that jobs
//     never hold memory that nobody can finish with.
// With two jobs and a tight budget this is Algorithm 1's schedule: the leader's ANGs alone, then
// the leader's DNGs each beside the next job's ANG, then that job's DNGs beside the leader's next
// iteration; where memory allows, the next job starts up to p groups early.
//
// plan_round applies the same step rule to predicted state to lay out a whole round (every job
// one iteration): worked examples in the tests and `tandem` documentation use it; the policy
// (nodegroup.hpp) calls choose_step at every barrier with measured state.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tandem/schedule/node_groups.hpp"
#include "tandem/schedule/policy.hpp"

namespace tandem::schedule {

/// What a group costs in regions: the most it adds during the group over what the job held when
/// the group began (>= 0), and what the job holds more (or less) once it is over.
struct group_need {
  std::size_t rise = 0;
  std::int64_t net = 0;
  group_kind kind = group_kind::allocating;
  friend bool operator==(const group_need&, const group_need&) = default;
};

struct pairing_job {
  job_id id = 0;
  std::size_t held = 0;  ///< regions held now
  /// Its groups from the next one to run to the end of the iteration; groups_done of its
  /// iteration's groups are behind it.
  std::vector<group_need> remaining;
  std::size_t groups_done = 0;
  /// Waiting at the boundary of remaining[0]; a job that is not (building its model, between
  /// iterations, running a group that is not part of this step) counts with what it holds.
  bool ready = false;
  /// Among jobs at their iteration's start, lower turns go first, so that jobs take turns (the
  /// policy numbers iteration starts); ties go to more groups (Algorithm 1's order), then ids.
  std::size_t turn = 0;
  /// What it holds between iterations: whether a job waiting at its start fits once the jobs
  /// mid-iteration have finished theirs.
  std::size_t idle = 0;
};

/// The jobs (indices into `jobs`) that run their next group together until the next barrier, in
/// the order chosen; empty when no ready job's group fits. `streams` >= 1.
[[nodiscard]] std::vector<std::size_t> choose_step(std::span<const pairing_job> jobs,
                                                   std::size_t budget, std::size_t streams);

/// The most a job must still be able to add to what it holds to finish its iteration from here.
[[nodiscard]] std::size_t need_to_finish(std::span<const group_need> remaining);

/// One entry of a laid-out round: job `job` runs its group `group`.
struct planned_group {
  job_id job = 0;
  std::size_t group = 0;
  friend bool operator==(const planned_group&, const planned_group&) = default;
};

/// A round laid out in advance: every job (all at their iteration's start, all ready) runs one
/// iteration, each step chosen by choose_step from the state the previous steps predict. Steps
/// separated by barriers. Throws config_error if a step can choose nothing (a job's iteration
/// cannot fit beside the others' holdings).
[[nodiscard]] std::vector<std::vector<planned_group>> plan_round(std::vector<pairing_job> jobs,
                                                                 std::size_t budget,
                                                                 std::size_t streams);

}  // namespace tandem::schedule
