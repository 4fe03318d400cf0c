#pragma once
// The jobs of one device whose planner plans jointly (tensile), planned together as TENSILE
// plans every job on a GPU at once (§4.5, Algorithm 3): one copy channel shared out among them,
// one system-wide budget (the sum of their plan budgets). A job joins when its recorded
// iteration is planned and leaves with its planned_training; each arrival or departure plans
// every present job again (footprint::online_replanner), and so does a drift of the operation
// times the jobs measure under their plans past the replanner's threshold; each job takes its
// new plan at its next iteration boundary. Jobs naming different planner specs are planned in
// separate groups. Thread-safe: jobs call it from their own threads.

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/footprint/cost_model.hpp"
#include "tandem/footprint/online_replanner.hpp"
#include "tandem/footprint/plan.hpp"
#include "tandem/memory/device_pool.hpp"

namespace tandem::runtime::detail {

class joint_footprint {
 public:
  explicit joint_footprint(footprint::cost_options costs) : costs_(costs) {}

  /// Whether the planner `spec` names plans jobs jointly.
  [[nodiscard]] static bool plans_jointly(const std::string& spec);

  /// Job `job` joins the group of `planner` with its recorded iteration and its own budget
  /// (0: the planner's own choice, for the whole group then). Returns its plan, whose version
  /// goes to `version` (for newer_plan); the others present get new plans too.
  [[nodiscard]] footprint::plan join(memory::job_id job, const std::string& planner,
                                     footprint::access_sequence sequence, std::size_t budget_bytes,
                                     std::uint64_t& version);
  /// The job's current plan when it is newer than `version` (which it then updates).
  [[nodiscard]] std::optional<footprint::plan> newer_plan(memory::job_id job,
                                                          std::uint64_t& version);
  /// What the job's last planned iteration measured, one duration per operation of its
  /// sequence (empty: nothing usable). Folded into the operation times' moving average; when
  /// they have drifted past the threshold from those the plans were made for, every job of the
  /// group is planned again (TENSILE §4.5), each taking its new plan at its next boundary.
  /// Returns whether that happened. Does nothing for a job not joined.
  bool measured(memory::job_id job, const std::vector<double>& durations_s);
  /// The job leaves; the others present are planned again. Does nothing for a job not joined.
  void leave(memory::job_id job) noexcept;

  /// Plans made for the group of `planner` so far (each planning plans every job of it).
  [[nodiscard]] std::size_t replans(const std::string& planner) const;
  /// Of those, the ones made because the measured operation times drifted.
  [[nodiscard]] std::size_t drift_replans(const std::string& planner) const;

 private:
  struct group {
    std::unique_ptr<footprint::online_replanner> replanner;
    std::map<memory::job_id, std::size_t> budgets;
    std::size_t drift_replans = 0;
  };
  struct current {
    std::string planner;
    footprint::plan plan;
    std::uint64_t version = 0;
  };
  /// Plans `g` (named `planner`) again and hands the plans out. Holds mutex_.
  void replan(const std::string& planner, group& g);

  footprint::cost_options costs_;
  mutable std::mutex mutex_;
  std::map<std::string, group> groups_;
  std::map<memory::job_id, current> plans_;
  std::uint64_t next_version_ = 1;
};

}  // namespace tandem::runtime::detail
