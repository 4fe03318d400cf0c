// TENSILE (Zhang et al., VLDB 2022, §4): one greedy, peak-driven plan for every job of a device.
// Note [TENSILE's rounds], Algorithm 3 as built here:
// - Each round prices the jobs' plans together (predict_together) and analyses the system-wide
//   peak (Algorithm 2): the instant every job's curve added up is highest, and the tensors in
//   device memory then (MPT) that have an idle stretch around it: their last access ended by
//   the peak and their next one starts after it.
// - Swap scheduling (Algorithm 1): those tensors, the largest first among all jobs, each get a
//   copy out and a copy in placed in the windows that make them useful and harmless: the copy
//   out after the last access and done by the peak, as early as the channel allows; the copy in
//   after the peak and done before the next access, as late as the channel allows. A copy goes
//   only where the one channel the jobs share is idle (the channel's busy times come from the
//   prediction, and grow with every copy placed in the round), so it never queues behind
//   another and no operation waits for it. Optimizer-updated tensors (parameters, optimizer
//   state: their last read is in the optimizer's phase) are swapped across iterations (Note
//   [Stretches across iterations], plan.hpp) when the peak lies after their update or before
//   their first read: out right after the update, done by the peak (this iteration's, or the
//   next one's when the peak comes before the first read), in during the next iteration, done
//   before the first read. The channel is periodic, of the steady state's period
//   (prediction::next_iteration_s): each busy time is also placed one period earlier and
//   later, so that copies out running past the iteration's end and the next iteration's
//   early copies in never overlap. A job swaps at most max_swap_ratio of its tensors.
// - The round's choices are priced again: a copy the prediction shows queued or late, or a job
//   that got slower, is taken back and not tried again at that peak. A round that places
//   nothing ends the swapping.
// - Recomputation (§4.4): while the peak is above the budget, the peak's tensors ranked by
//   MSPS (bytes saved per second of rerun), only stretches whose rerun reads tensors that are
//   never released or moved by then, so that no rerun depends on another decision.
// - Rounds run to completion (no stop within one), so the plan for a budget is the first
//   rounds of the plan for no budget: a budget at or above that plan's peak is reached.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "planner_support.hpp"
#include "stretches.hpp"
#include "tandem/common/error.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/joint_planner.hpp"

namespace tandem::footprint::detail {

namespace {

/// Seconds kept between two copies on the channel, so that a copy placed right after another
/// never queues behind it through rounding.
constexpr double copy_gap_s = 1e-9;

/// The channel's busy times, sorted by start, repeated every `period_s` (the steady state's
/// iteration; 0: not repeated) one period before and after.
class channel_map {
 public:
  explicit channel_map(double period_s) : period_s_(period_s) {}

  void add(double from, double to) {
    insert(from, to);
    if (period_s_ > 0) {
      insert(from - period_s_, to - period_s_);
      insert(from + period_s_, to + period_s_);
    }
  }

  /// The earliest start in [lo, hi] of `length` seconds that overlap no busy time.
  [[nodiscard]] std::optional<double> earliest(double lo, double hi, double length) const {
    double start = lo;
    for (const auto& [from, to] : busy_) {
      if (to + copy_gap_s <= start) continue;
      if (from >= start + length + copy_gap_s) break;
      start = to + copy_gap_s;
      if (start > hi) return std::nullopt;
    }
    if (start > hi) return std::nullopt;
    return start;
  }

  [[nodiscard]] double period_s() const { return period_s_; }

  /// Whether `length` seconds from `start` overlap no busy time.
  [[nodiscard]] bool free_at(double start, double length) const {
    return earliest(start, start, length).has_value();
  }

  /// The latest start at or after `lo` of `length` seconds that end by `deadline` and overlap
  /// no busy time.
  [[nodiscard]] std::optional<double> latest(double lo, double deadline, double length) const {
    double start = deadline - length;
    for (auto b = busy_.rbegin(); b != busy_.rend(); ++b) {
      if (b->first >= start + length + copy_gap_s) continue;
      if (b->second + copy_gap_s <= start) break;
      start = b->first - length - copy_gap_s;
      if (start < lo) return std::nullopt;
    }
    if (start < lo) return std::nullopt;
    return start;
  }

 private:
  void insert(double from, double to) {
    const auto at = std::lower_bound(
        busy_.begin(), busy_.end(), from,
        [](const std::pair<double, double>& b, double value) { return b.first < value; });
    busy_.insert(at, {from, to});
  }

  double period_s_ = 0;
  std::vector<std::pair<double, double>> busy_;
};

/// The moments a copy can start: the executor looks at its triggers only as operations start
/// and end (plan_executor.cpp), so a copy placed between them would start late. Sorted.
using polls = std::vector<double>;

/// The earliest poll in [lo, hi] at which `length` seconds overlap no busy time.
std::optional<double> earliest_poll(const channel_map& channel, const polls& at, double lo,
                                    double hi, double length) {
  for (double from = lo;;) {
    const auto free = channel.earliest(from, hi, length);
    if (!free) return std::nullopt;
    const auto poll = std::lower_bound(at.begin(), at.end(), *free);
    if (poll == at.end() || *poll > hi) return std::nullopt;
    if (channel.free_at(*poll, length)) return *poll;
    from = *poll;  // busy there: the next free start is later
  }
}

/// The latest poll at or after `lo` from which `length` seconds end by `deadline` and overlap
/// no busy time.
std::optional<double> latest_poll(const channel_map& channel, const polls& at, double lo,
                                  double deadline, double length) {
  for (double until = deadline;;) {
    const auto free = channel.latest(lo, until, length);
    if (!free) return std::nullopt;
    auto poll = std::upper_bound(at.begin(), at.end(), *free);
    if (poll == at.begin()) return std::nullopt;
    --poll;
    if (*poll < lo) return std::nullopt;
    if (channel.free_at(*poll, length)) return *poll;
    until = *poll + length;  // busy there: the next free start is earlier
  }
}

/// One job's iteration as the last prediction timed it.
struct job_view {
  const access_sequence* s = nullptr;
  const plan* p = nullptr;
  const prediction* pr = nullptr;

  [[nodiscard]] double op_start(std::size_t op) const { return pr->op_start_s[op]; }
  [[nodiscard]] double op_end(std::size_t op) const {
    return op_start(op) + s->operations[op].duration_s;
  }
  /// When access `a` of tensor `t` starts and ends (a persistent tensor's access 0: time 0).
  [[nodiscard]] double access_start(std::size_t t, std::size_t a) const {
    const auto op = s->access_op(t, a);
    return op ? op_start(*op) : 0.0;
  }
  [[nodiscard]] double access_end(std::size_t t, std::size_t a) const {
    const auto op = s->access_op(t, a);
    return op ? op_end(*op) : 0.0;
  }

  /// Every operation's start and end, sorted.
  [[nodiscard]] polls moments() const {
    polls at;
    at.reserve(2 * s->operations.size());
    for (std::size_t op = 0; op < s->operations.size(); ++op) {
      at.push_back(op_start(op));
      at.push_back(op_end(op));
    }
    std::sort(at.begin(), at.end());
    return at;
  }

  /// Whether tensor `t` takes device memory at the end of instant `at_s`, nothing planned.
  [[nodiscard]] bool live_at(std::size_t t, double at_s) const {
    const auto& x = s->tensors[t];
    if (!x.created_by) return true;
    const auto released = s->release_op(t);
    return op_start(*x.created_by) <= at_s && released && op_end(*released) > at_s;
  }

  /// Whether tensor `t` is updated by the optimizer and lives across iterations: a persistent
  /// tensor whose last read is in the optimizer's phase, after an earlier operation.
  [[nodiscard]] bool optimizer_updated(std::size_t t) const {
    const auto& x = s->tensors[t];
    return !x.created_by && !x.read_by.empty() && x.read_by.front() > 0 &&
           s->operations[x.read_by.back()].where == phase::optimizer;
  }

  /// Whether `at_s` lies in an optimizer-updated tensor's stretch across iterations: after its
  /// last access ended, or before its first read starts.
  [[nodiscard]] bool idle_across(std::size_t t, double at_s) const {
    if (!optimizer_updated(t)) return false;
    const auto reads = s->tensors[t].read_by.size();
    return access_end(t, reads) <= at_s || at_s < access_start(t, 1);
  }

  /// The stretch (a, a + 1) whose idle time holds `at_s`: access a ended by then, a + 1 starts
  /// after it.
  [[nodiscard]] std::optional<std::size_t> idle_stretch(std::size_t t, double at_s) const {
    const auto reads = s->tensors[t].read_by.size();
    for (std::size_t a = 0; a < reads; ++a) {
      if (access_start(t, a + 1) <= at_s) continue;
      if (access_end(t, a) <= at_s) return a;
      return std::nullopt;
    }
    return std::nullopt;
  }
};

struct candidate {
  std::size_t job = 0;
  std::size_t tensor = 0;
  std::size_t stretch = 0;  ///< released after this access, needed at the next
  bool wraps = false;       ///< ...of the next iteration: from the last access to access 1
  std::size_t bytes = 0;
  double rank = 0;  ///< bytes for swaps, MSPS for recomputes
};

/// Job, tensor, stretch, and whether a recompute (else a swap) was tried.
using attempt_key = std::tuple<std::size_t, std::size_t, std::size_t, bool>;

class tensile_planner final : public planner, public joint_planner {
 public:
  explicit tensile_planner(const tensile_options& options) : options_(options) {
    TANDEM_EXPECTS(options.max_swap_ratio > 0 && options.max_swap_ratio <= 1, usage_error,
                   "tensile: max_swap_ratio is a share of a job's tensors in (0, 1], not " +
                       std::to_string(options.max_swap_ratio));
    TANDEM_EXPECTS(options.max_rounds >= 1, usage_error,
                   "tensile: max_rounds must be at least 1 (one peak analysis)");
  }

  [[nodiscard]] std::string_view name() const override { return "tensile"; }
  [[nodiscard]] double drift_threshold() const override { return options_.drift; }
  [[nodiscard]] std::size_t settle_iterations() const override { return options_.settle; }
  [[nodiscard]] std::string_view summary() const override {
    return "TENSILE: swap the largest tensors at the system-wide peak of every job into idle "
           "channel time so that nothing waits, optimizer state across iterations; then "
           "recompute by MSPS while the budget is not met (options: max_swap_ratio, recompute, "
           "across, drift, settle)";
  }

  [[nodiscard]] plan make_plan(const access_sequence& sequence,
                               const planning_request& request) const override {
    const joint_job job{&sequence, options_.max_swap_ratio};
    return make_joint_plan(std::span<const joint_job>(&job, 1),
                           {.budget_bytes = request.budget_bytes, .costs = request.costs})
        .front();
  }

  [[nodiscard]] std::vector<plan> make_joint_plan(std::span<const joint_job> jobs,
                                                  const joint_request& request) const override;

 private:
  tensile_options options_;
};

/// The state of one planning: the plans, their last prediction, and what was tried.
class planning {
 public:
  planning(std::span<const joint_job> jobs, const joint_request& request,
           const tensile_options& options)
      : jobs_(jobs), request_(request), options_(options) {
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const auto& job = jobs[j];
      TANDEM_EXPECTS(job.sequence != nullptr, usage_error,
                     "tensile: joint job " + std::to_string(j) + " has no access sequence");
      TANDEM_EXPECTS(job.max_swap_ratio > 0 && job.max_swap_ratio <= 1, usage_error,
                     "tensile: job " + std::to_string(j) + " ('" + job.sequence->model +
                         "'): max_swap_ratio is a share of its tensors in (0, 1], not " +
                         std::to_string(job.max_swap_ratio));
      plans_.push_back(start_plan(*job.sequence, "tensile",
                                  {.budget_bytes = request.budget_bytes, .costs = request.costs}));
      const auto tensors = static_cast<double>(job.sequence->tensors.size());
      swap_cap_.push_back(static_cast<std::size_t>(std::floor(job.max_swap_ratio * tensors)));
      swapped_.emplace_back();
    }
    price();
  }

  std::vector<plan> run() {
    bool swapping = true;
    for (std::size_t round = 0; round < options_.max_rounds; ++round) {
      const auto peak = system_peak_of(predictions_);
      if (request_.budget_bytes != 0 && peak.bytes <= request_.budget_bytes) break;
      if (swapping) {
        swapping = swap_round(peak);
        continue;
      }
      if (!options_.recompute || request_.budget_bytes == 0 || !recompute_round(peak)) break;
    }
    return std::move(plans_);
  }

 private:
  void price() {
    std::vector<planned_job> priced;
    for (std::size_t j = 0; j < jobs_.size(); ++j)
      priced.push_back({jobs_[j].sequence, &plans_[j]});
    predictions_ = predict_together(priced, request_.costs);
  }

  [[nodiscard]] job_view view(std::size_t j) const {
    return {jobs_[j].sequence, &plans_[j], &predictions_[j]};
  }

  [[nodiscard]] double tolerance_s(std::size_t j) const {
    return 1e-7 * std::max(predictions_[j].iteration_s, 1e-6);
  }

  [[nodiscard]] bool tried(const attempt_key& key, double at_s) const {
    const auto found = failed_.find(key);
    return found != failed_.end() && found->second == at_s;
  }

  /// The peak's tensors with an idle stretch around it, no decision there yet, from jobs that
  /// may still swap (or, for recomputes, anything rebuildable), sorted best first.
  std::vector<candidate> swap_candidates(double at_s) const {
    std::vector<candidate> out;
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      if (swapped_[j].size() >= swap_cap_[j]) continue;
      const auto v = view(j);
      const stretch_lookup lookup(*v.s, *v.p);
      for (std::size_t t = 0; t < v.s->tensors.size(); ++t) {
        const auto& x = v.s->tensors[t];
        if (x.bytes == 0 || !v.live_at(t, at_s)) continue;
        if (options_.across && v.idle_across(t, at_s)) {
          const auto last = x.read_by.size();
          if (has_decision(lookup, *v.p, t, last) || has_decision(lookup, *v.p, t, 0) ||
              tried({j, t, last, false}, at_s))
            continue;
          out.push_back({j, t, last, true, x.bytes, static_cast<double>(x.bytes)});
          continue;
        }
        const auto a = v.idle_stretch(t, at_s);
        if (!a || has_decision(lookup, *v.p, t, *a) || tried({j, t, *a, false}, at_s)) continue;
        out.push_back({j, t, *a, false, x.bytes, static_cast<double>(x.bytes)});
      }
    }
    sort_best_first(out);
    return out;
  }

  /// Whether tensor `t` has a decision released after access `a` (one across iterations also
  /// has it out from access 0).
  static bool has_decision(const stretch_lookup& lookup, const plan& p, std::size_t t,
                           std::size_t a) {
    const auto& mine = lookup.decisions_of(t);
    return std::any_of(mine.begin(), mine.end(), [&](std::size_t k) {
      return p.decisions[k].released_after == a || (a == 0 && p.decisions[k].wraps);
    });
  }

  static void sort_best_first(std::vector<candidate>& c) {
    std::stable_sort(c.begin(), c.end(),
                     [](const candidate& a, const candidate& b) { return a.rank > b.rank; });
  }

  /// The trigger of a copy placed at `at_s` (a poll: an operation's start or end) before
  /// operation `needed_op`.
  static trigger trigger_at(const job_view& v, std::size_t needed_op, double at_s) {
    return trigger_near(
        *v.s, [&](std::size_t op) { return v.op_start(op); }, 0, needed_op, at_s,
        -std::numeric_limits<double>::infinity());
  }

  /// Algorithm 1 over the peak's tensors; true when a swap was kept.
  bool swap_round(const system_peak& peak) {
    std::vector<polls> moments;
    for (std::size_t j = 0; j < plans_.size(); ++j) moments.push_back(view(j).moments());
    channel_map channel(predictions_.front().next_iteration_s);
    for (const auto& [from, to] : predictions_.front().carried_copies) channel.add(from, to);
    for (const auto& pr : predictions_) {
      for (std::size_t k = 0; k < pr.copies.size(); ++k) {
        const auto& c = pr.copies[k];
        if (c.out_done_s > 0 || c.out_started_s > 0) channel.add(c.out_started_s, c.out_done_s);
        if (c.in_done_s > 0 || c.in_started_s > 0) channel.add(c.in_started_s, c.in_done_s);
      }
    }
    std::vector<std::pair<std::size_t, std::size_t>> added;  // job, decision index
    for (const auto& c : swap_candidates(peak.at_s)) {
      if (swapped_[c.job].size() >= swap_cap_[c.job] && !swapped_[c.job].count(c.tensor)) continue;
      if (c.wraps) {
        if (place_across(c, peak.at_s, channel, moments[c.job])) {
          added.emplace_back(c.job, plans_[c.job].decisions.size() - 1);
        } else {
          failed_[{c.job, c.tensor, c.stretch, false}] = peak.at_s;
        }
        continue;
      }
      const auto v = view(c.job);
      const auto& at = moments[c.job];
      const double copy_s = static_cast<double>(c.bytes) / request_.costs.copy_bandwidth;
      const auto out =
          earliest_poll(channel, at, v.access_end(c.tensor, c.stretch), peak.at_s - copy_s, copy_s);
      std::optional<double> in;
      if (out) {
        in = latest_poll(channel, at, std::max(*out + copy_s, peak.at_s) + copy_gap_s,
                         v.access_start(c.tensor, c.stretch + 1) - copy_gap_s, copy_s);
      }
      if (!out || !in) {
        failed_[{c.job, c.tensor, c.stretch, false}] = peak.at_s;
        continue;
      }
      const auto needed_op = *v.s->access_op(c.tensor, c.stretch + 1);
      plans_[c.job].decisions.push_back({c.tensor, action::swap, c.stretch, c.stretch + 1,
                                         trigger_at(v, needed_op, *out),
                                         trigger_at(v, needed_op, *in), false});
      channel.add(*out, *out + copy_s);
      channel.add(*in, *in + copy_s);
      swapped_[c.job].insert(c.tensor);
      added.emplace_back(c.job, plans_[c.job].decisions.size() - 1);
    }
    if (added.empty()) return false;
    return keep_harmless(added, peak.at_s);
  }

  /// Algorithm 1 for a stretch across iterations (Note [Stretches across iterations]): the copy
  /// out after the update, as early as the channel allows and done by the peak (one period on
  /// when the peak comes before the first read); the copy in in the next iteration, after the
  /// copy out and the peak, as late as the channel allows and done before the first read. True
  /// when placed (the decision appended, its copies on `channel`).
  bool place_across(const candidate& c, double peak_s, channel_map& channel, const polls& at) {
    const auto v = view(c.job);
    const double period = channel.period_s();
    const double copy_s = static_cast<double>(c.bytes) / request_.costs.copy_bandwidth;
    const double released = v.access_end(c.tensor, c.stretch);
    const double peak = peak_s >= released ? peak_s : peak_s + period;
    // Out in this iteration (its triggers are this iteration's operations).
    const auto out = earliest_poll(channel, at, released, peak - copy_s, copy_s);
    if (!out) return false;
    // In the next iteration's time.
    const double lo = std::max({*out + copy_s - period, peak - period, 0.0}) + copy_gap_s;
    const auto in = latest_poll(channel, at, lo, v.access_start(c.tensor, 1) - copy_gap_s, copy_s);
    if (!in) return false;
    const auto first_op = *v.s->access_op(c.tensor, 1);
    plans_[c.job].decisions.push_back({c.tensor, action::swap, c.stretch, 1,
                                       trigger_at(v, v.s->operations.size(), *out),
                                       trigger_at(v, first_op, *in), true});
    channel.add(*out, *out + copy_s);
    channel.add(*in, *in + copy_s);
    swapped_[c.job].insert(c.tensor);
    return true;
  }

  /// Prices the round's additions and takes back those that made anything wait; true when any
  /// stayed.
  bool keep_harmless(std::vector<std::pair<std::size_t, std::size_t>> added, double at_s) {
    const auto before = predictions_;
    for (int attempt = 0; attempt < 4 && !added.empty(); ++attempt) {
      price();
      std::vector<bool> slower(jobs_.size(), false);
      bool any_slower = false;
      for (std::size_t j = 0; j < jobs_.size(); ++j) {
        // A swap called off (cost_model.cpp) saves nothing: harm as a wait is.
        slower[j] = predictions_[j].stall_s > before[j].stall_s + tolerance_s(j) ||
                    predictions_[j].iteration_s > before[j].iteration_s + tolerance_s(j) ||
                    predictions_[j].called_off_bytes > before[j].called_off_bytes;
        any_slower = any_slower || slower[j];
      }
      if (!any_slower) return true;
      // Take back the copies that queued or came late; all of a slower job's when none did.
      std::vector<std::pair<std::size_t, std::size_t>> bad;
      for (const auto& [j, k] : added) {
        if (!slower[j]) continue;
        const auto& c = predictions_[j].copies[k];
        const auto& d = plans_[j].decisions[k];
        const auto v = view(j);
        const bool late = c.in_done_s > v.access_start(d.tensor, d.needed_at) + tolerance_s(j);
        const bool queued = c.out_started_s > c.out_issued_s + tolerance_s(j) ||
                            c.in_started_s > c.in_issued_s + tolerance_s(j);
        if (late || queued || c.called_off || attempt == 3) bad.emplace_back(j, k);
      }
      if (bad.empty()) {
        for (const auto& jk : added) {
          if (slower[jk.first]) bad.push_back(jk);
        }
      }
      remove(bad, added, at_s);
    }
    price();
    return !added.empty();
  }

  /// Takes decisions `bad` out of the plans (and of `added`), marking them tried at `at_s`.
  void remove(const std::vector<std::pair<std::size_t, std::size_t>>& bad,
              std::vector<std::pair<std::size_t, std::size_t>>& added, double at_s) {
    std::map<std::size_t, std::vector<std::size_t>> by_job;
    for (const auto& [j, k] : bad) by_job[j].push_back(k);
    for (auto& [j, ks] : by_job) {
      std::sort(ks.rbegin(), ks.rend());
      for (const auto k : ks) {
        const auto d = plans_[j].decisions[k];
        failed_[{j, d.tensor, d.released_after, d.what == action::recompute}] = at_s;
        plans_[j].decisions.erase(plans_[j].decisions.begin() + static_cast<std::ptrdiff_t>(k));
        if (d.what == action::swap) {
          const auto& left = plans_[j].decisions;
          const bool still = std::any_of(left.begin(), left.end(), [&](const decision& o) {
            return o.tensor == d.tensor && o.what == action::swap;
          });
          if (!still) swapped_[j].erase(d.tensor);
        }
      }
      // Indices after a removed one move down.
      std::vector<std::pair<std::size_t, std::size_t>> kept;
      for (const auto& [jj, k] : added) {
        if (jj != j) {
          kept.emplace_back(jj, k);
          continue;
        }
        if (std::find(ks.begin(), ks.end(), k) != ks.end()) continue;
        const auto shift = static_cast<std::size_t>(
            std::count_if(ks.begin(), ks.end(), [&](std::size_t r) { return r < k; }));
        kept.emplace_back(jj, k - shift);
      }
      added = std::move(kept);
    }
  }

  /// §4.4 over the peak's tensors: recomputes by MSPS until the peak's estimate is within the
  /// budget; true when any stayed.
  bool recompute_round(const system_peak& peak) {
    std::vector<candidate> ranked;
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      for (auto c : recompute_candidates(j, peak.at_s)) ranked.push_back(c);
    }
    sort_best_first(ranked);
    std::vector<std::pair<std::size_t, std::size_t>> added;
    std::size_t estimate = peak.bytes;
    std::vector<std::set<std::size_t>> rerun_inputs(jobs_.size());
    for (const auto& c : ranked) {
      if (estimate <= request_.budget_bytes) break;
      const auto& s = *jobs_[c.job].sequence;
      // A tensor a rerun of this round reads stays, and so does a rerun's own creator's input.
      if (rerun_inputs[c.job].count(c.tensor)) continue;
      const auto creator = *s.tensors[c.tensor].created_by;
      const auto inputs = s.inputs_of(creator);
      if (std::any_of(inputs.begin(), inputs.end(), [&](std::size_t u) {
            return recomputed_.count({c.job, u}) != 0;
          }))
        continue;
      plans_[c.job].decisions.push_back(recompute(c.tensor, {c.stretch, c.stretch + 1}));
      recomputed_.insert({c.job, c.tensor});
      rerun_inputs[c.job].insert(inputs.begin(), inputs.end());
      added.emplace_back(c.job, plans_[c.job].decisions.size() - 1);
      estimate -= std::min(estimate, c.bytes);
    }
    if (added.empty()) return false;
    const auto before = predictions_;
    price();
    bool waited = false;
    for (std::size_t j = 0; j < jobs_.size(); ++j)
      waited = waited || predictions_[j].stall_s > before[j].stall_s + tolerance_s(j);
    if (!waited) return true;
    // A rerun that shifted a swap-in's trigger too late: keep the round's first only, or none.
    std::vector<std::pair<std::size_t, std::size_t>> rest(added.begin() + 1, added.end());
    for (const auto& [j, k] : rest) recomputed_.erase({j, plans_[j].decisions[k].tensor});
    remove(rest, added, peak.at_s);
    price();
    waited = false;
    for (std::size_t j = 0; j < jobs_.size(); ++j)
      waited = waited || predictions_[j].stall_s > before[j].stall_s + tolerance_s(j);
    if (!waited) return true;
    const auto [j, k] = added.front();
    recomputed_.erase({j, plans_[j].decisions[k].tensor});
    remove(added, added, peak.at_s);
    price();
    return true;  // tried: the next round ranks again without it
  }

  std::vector<candidate> recompute_candidates(std::size_t j, double at_s) const {
    const auto v = view(j);
    const auto& s = *v.s;
    const stretch_lookup lookup(s, *v.p);
    std::vector<candidate> out;
    for (std::size_t t = 0; t < s.tensors.size(); ++t) {
      const auto& x = s.tensors[t];
      if (!x.created_by || x.bytes == 0 || !s.operations[*x.created_by].recomputable) continue;
      if (!lookup.decisions_of(t).empty() || !v.live_at(t, at_s)) continue;
      const auto a = v.idle_stretch(t, at_s);
      if (!a || tried({j, t, *a, true}, at_s)) continue;
      const auto needed_op = *s.access_op(t, *a + 1);
      // Only reruns whose inputs are never released or moved before they are needed.
      bool rebuildable = true;
      for (const auto u : s.inputs_of(*x.created_by)) {
        const auto released = s.release_op(u);
        // A stretch across iterations leaves it in memory between its first and last reads.
        const auto& moves = lookup.decisions_of(u);
        const bool moved = std::any_of(moves.begin(), moves.end(), [&](std::size_t k) {
          const auto span = span_of(s, v.p->decisions[k]);
          return !span.wraps || span.out_before(needed_op);
        });
        if ((released && *released < needed_op) || moved || recomputed_.count({j, u}) != 0)
          rebuildable = false;
      }
      if (!rebuildable) continue;
      const double rerun_s = std::max(s.operations[*x.created_by].duration_s, 1e-12);
      out.push_back({j, t, *a, false, x.bytes, static_cast<double>(x.bytes) / rerun_s});
    }
    return out;
  }

  std::span<const joint_job> jobs_;
  joint_request request_;
  tensile_options options_;
  std::vector<plan> plans_;
  std::vector<prediction> predictions_;
  std::vector<std::size_t> swap_cap_;                         ///< tensors each job may swap
  std::vector<std::set<std::size_t>> swapped_;                ///< tensors each job swaps
  std::set<std::pair<std::size_t, std::size_t>> recomputed_;  ///< job, tensor
  std::map<attempt_key, double> failed_;  ///< tried and taken back, at this peak time
};

std::vector<plan> tensile_planner::make_joint_plan(std::span<const joint_job> jobs,
                                                   const joint_request& request) const {
  if (jobs.empty()) return {};
  return planning(jobs, request, options_).run();
}

}  // namespace

std::unique_ptr<planner> make_tensile_planner(const tensile_options& options) {
  return std::make_unique<tensile_planner>(options);
}

}  // namespace tandem::footprint::detail

namespace tandem::footprint {

std::unique_ptr<planner> make_tensile_planner(const tensile_options& options) {
  return detail::make_tensile_planner(options);
}

}  // namespace tandem::footprint
