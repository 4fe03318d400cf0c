#include "tandem/schedule/pairing.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::schedule {

namespace {

using signed_bytes = std::int64_t;

signed_bytes as_signed(std::size_t bytes) {
  return static_cast<signed_bytes>(bytes);
}

std::int64_t net_of(std::span<const group_need> groups) {
  return std::accumulate(groups.begin(), groups.end(), std::int64_t{0},
                         [](std::int64_t sum, const group_need& g) { return sum + g.net; });
}

/// The order candidates are considered in: freeing groups first, then allocating ones; within
/// each, jobs further through their iteration (as a share of its groups) first, then lower
/// turns, then more groups.
bool considered_before(const pairing_job& a, const pairing_job& b) {
  const bool a_frees = a.remaining.front().kind == group_kind::freeing;
  const bool b_frees = b.remaining.front().kind == group_kind::freeing;
  if (a_frees != b_frees) return a_frees;
  // Further through its iteration by share of its groups, not count: a job cut into many
  // groups would otherwise always lead one cut into few, and starve it.
  const auto a_done = a.groups_done * (b.groups_done + b.remaining.size());
  const auto b_done = b.groups_done * (a.groups_done + a.remaining.size());
  if (a_done != b_done) return a_done > b_done;
  if (a.turn != b.turn) return a.turn < b.turn;
  if (a.remaining.size() != b.remaining.size()) return a.remaining.size() > b.remaining.size();
  return a.id < b.id;
}

/// Could every job that is mid-iteration after the step finish, one at a time, each with the
/// room the budget leaves plus what the earlier ones gave back? `after` holds each job's state
/// once the step's groups are done.
bool all_can_finish(std::span<const pairing_job> after, std::size_t budget) {
  signed_bytes free_bytes = as_signed(budget);
  std::vector<const pairing_job*> unfinished;
  for (const auto& job : after) {
    free_bytes -= as_signed(job.held);
    // A job at its iteration's start has begun nothing: it holds, and needs no room yet.
    if (!job.remaining.empty() && job.groups_done > 0) unfinished.push_back(&job);
  }
  if (free_bytes < 0) return false;
  while (!unfinished.empty()) {
    const auto next = std::find_if(unfinished.begin(), unfinished.end(), [&](const auto* job) {
      return as_signed(need_to_finish(job->remaining)) <= free_bytes;
    });
    if (next == unfinished.end()) return false;
    // Finishing changes what it holds by its remaining net (a negative net gives room back).
    free_bytes -= net_of((*next)->remaining);
    unfinished.erase(next);
  }
  return true;
}

}  // namespace

std::size_t need_to_finish(std::span<const group_need> remaining) {
  signed_bytes before = 0;
  signed_bytes most = 0;
  for (const auto& group : remaining) {
    most = std::max(most, before + as_signed(group.rise));
    before += group.net;
  }
  return static_cast<std::size_t>(std::max<signed_bytes>(most, 0));
}

namespace {

/// choose_step's rule; `first_come`: a job waiting at its start that would fit between
/// iterations is not overtaken by a job with a later turn starting an iteration.
std::vector<std::size_t> choose_step(std::span<const pairing_job> jobs, std::size_t budget,
                                     std::size_t streams, bool first_come) {
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].ready && !jobs[i].remaining.empty()) candidates.push_back(i);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
    return considered_before(jobs[a], jobs[b]);
  });

  std::size_t held = 0;
  std::size_t idle = 0;
  for (const auto& job : jobs) {
    held += job.held;
    idle += job.idle;
  }
  const bool anyone_mid_iteration = std::any_of(jobs.begin(), jobs.end(), [](const auto& job) {
    return job.groups_done > 0 && !job.remaining.empty();
  });
  std::vector<pairing_job> after(jobs.begin(), jobs.end());
  std::vector<std::size_t> chosen;
  std::size_t rises = 0;
  // The earliest turn of a job left waiting at its start for room that the jobs mid-iteration
  // will give back.
  std::optional<std::size_t> waiting_turn;
  for (const auto candidate : candidates) {
    if (chosen.size() == streams) break;
    const auto& job = jobs[candidate];
    const auto& next = job.remaining.front();
    const bool starts = job.groups_done == 0;
    if (first_come && starts && waiting_turn && job.turn > *waiting_turn) continue;
    const auto note_if_waiting = [&] {
      const bool fits_between_iterations = idle - job.idle + job.held + next.rise <= budget;
      if (starts && anyone_mid_iteration && fits_between_iterations && !waiting_turn)
        waiting_turn = job.turn;
    };
    if (held + rises + next.rise > budget) {
      note_if_waiting();
      continue;
    }
    auto& state = after[candidate];
    const auto saved = state;
    state.held =
        static_cast<std::size_t>(std::max<signed_bytes>(as_signed(state.held) + next.net, 0));
    state.remaining.erase(state.remaining.begin());
    ++state.groups_done;
    if (!all_can_finish(after, budget)) {
      state = saved;
      note_if_waiting();
      continue;
    }
    rises += next.rise;
    chosen.push_back(candidate);
  }
  return chosen;
}

}  // namespace

std::vector<std::size_t> choose_step(std::span<const pairing_job> jobs, std::size_t budget,
                                     std::size_t streams) {
  TANDEM_EXPECTS(streams >= 1, usage_error, "choose_step needs at least one stream");
  auto chosen = choose_step(jobs, budget, streams, true);
  // Never an empty step for the rule's sake: one that moves nobody waits for no one to finish.
  if (chosen.empty()) chosen = choose_step(jobs, budget, streams, false);
  return chosen;
}

std::vector<std::vector<planned_group>> plan_round(std::vector<pairing_job> jobs,
                                                   std::size_t budget, std::size_t streams) {
  for (auto& job : jobs) job.ready = !job.remaining.empty();
  std::vector<std::vector<planned_group>> steps;
  for (;;) {
    const auto chosen = choose_step(jobs, budget, streams);
    if (chosen.empty()) {
      const bool done = std::all_of(jobs.begin(), jobs.end(),
                                    [](const pairing_job& job) { return job.remaining.empty(); });
      if (done) return steps;
      std::string waiting;
      for (const auto& job : jobs) {
        if (!job.remaining.empty())
          waiting += (waiting.empty() ? "" : ", ") + std::to_string(job.id);
      }
      TANDEM_FAIL(config_error, "no node group of job(s) " + waiting + " fits a budget of " +
                                    format_bytes(budget) +
                                    " beside what the others hold; raise the budget or run "
                                    "fewer jobs at once");
    }
    auto& step = steps.emplace_back();
    for (const auto i : chosen) {
      auto& job = jobs[i];
      step.push_back({job.id, job.groups_done});
      job.held = static_cast<std::size_t>(
          std::max<signed_bytes>(as_signed(job.held) + job.remaining.front().net, 0));
      job.remaining.erase(job.remaining.begin());
      ++job.groups_done;
    }
  }
}

}  // namespace tandem::schedule
