#pragma once
// Salus's GPU lanes (§3.3): which jobs share which part of the ephemeral region.
//
// Salus splits device memory into a persistent region (models, framework state: held for the
// job's life) and an ephemeral region (an iteration's temporaries: all freed when the iteration
// ends). The ephemeral region is cut into lanes, contiguous areas; iterations within a lane run
// one at a time, lanes run in parallel. A lane is as large as the largest ephemeral need of its
// jobs, and every admitted job's persistent memory plus every lane must fit the capacity:
//     sum over jobs of P_i + sum over lanes of L_j <= C        (the safety condition)
// so each lane can always run one iteration whatever the others do.
//
// Admitting a job (persistent P, ephemeral E) tries, in Salus's order (Algorithm 1):
//   1. a new lane of size E, if that stays safe (most parallelism) and max_lanes allows;
//   2. else the smallest existing lane of size >= E (best fit), if P alone stays safe;
//   3. else a reorganization that shrinks the ephemeral region's growth: the job shares one lane
//      with the m largest lanes merged together, sized to the largest of their sizes and E, for
//      the smallest m >= 1 that stays safe. m = 1 is Algorithm 1's "replace": the largest lane
//      grows to E (of all lanes it grows least, so the total stays smallest; Algorithm 1 scans
//      lanes from the smallest up and takes the first that fits, which grows the ephemeral region
//      more). m >= 2 merges lanes: for a given number of lanes given up, merging the largest ones
//      frees the most memory (a merge of set S frees sum(S) - max(S)). Merged jobs then take
//      turns in one lane, so a reorganization trades parallelism for admission; a policy that
//      would rather queue can check lanes().size() before and after.
//   Otherwise the job is not admitted (nothing changes) and the caller queues it. In particular
//   a job whose persistent memory fits beside no lane waits, although merging lanes would make
//   room: tried, it put short trials in a long job's lane behind it and PACK's average JCT on
//   bench/salus/long_and_short.toml went from 11.2-12.5 s to 34.1 s; waiting for a departure is
//   better.
//
// When lanes shrink: a departure (release) only takes the job out of its lane; the lane keeps
// its size, even when empty, until defragment(). Salus reclaims lane space by auto
// defragmentation at iteration boundaries: lanes move when their ephemeral memory is free, and
// Algorithm 1 retries queued jobs after a lane has moved. Counting freed room only from then on
// means an admission never relies on room that a lane not yet moved still occupies. The policy
// calls defragment() at iteration boundaries (and when no iteration runs), then retries its
// queue. An empty lane still counts, but a job may join it (step 2) or merge it away (step 3).
//
// Layout: lanes lie contiguously from offset 0 in the order they were opened, after every call.
// A lane whose offset changed (a reorganization, a defragmentation) moves there at its next
// iteration boundary, when its ephemeral memory is free anyway, so moving copies nothing.
//
// Every call is O(lanes log lanes + jobs); calls are serialized by the policy driver.

#include <cstddef>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tandem/memory/trace.hpp"

namespace tandem::schedule {

struct lane {
  std::size_t id = 0;      ///< unique for the assignment's life, increasing in opening order
  std::size_t size = 0;    ///< bytes; >= every member's ephemeral need
  std::size_t offset = 0;  ///< bytes from the start of the ephemeral region
  std::vector<memory::job_id> jobs;  ///< in order of arrival in the lane
};

class lane_assignment {
 public:
  using job_id = memory::job_id;

  /// `capacity`: bytes for the persistent and the ephemeral region together (C). `max_lanes`
  /// caps how many lanes may exist at once (1: every job shares one lane, as Salus's SRTF does).
  explicit lane_assignment(std::size_t capacity,
                           std::size_t max_lanes = std::numeric_limits<std::size_t>::max())
      : capacity_(capacity), max_lanes_(max_lanes) {}

  /// The lane `job` is admitted to, or nullopt when it does not fit now (nothing changes).
  /// Throws config_error when persistent + ephemeral exceed the capacity (it can never run) and
  /// usage_error when `job` is already admitted.
  std::optional<std::size_t> admit(job_id job, std::size_t persistent, std::size_t ephemeral);
  /// `job` leaves: its persistent memory is free at once, its lane space from the next
  /// defragment(). Throws usage_error when `job` is not admitted.
  void release(job_id job);
  /// At an iteration boundary: each lane shrinks to its members' largest ephemeral need, empty
  /// lanes are deleted, and lanes are laid out again without holes.
  void defragment();

  [[nodiscard]] const std::vector<lane>& lanes() const { return lanes_; }
  [[nodiscard]] std::optional<std::size_t> lane_of(job_id job) const;
  /// The lane `job` is in, or nullptr when it is not admitted.
  [[nodiscard]] const lane* lane_holding(job_id job) const;
  [[nodiscard]] std::size_t persistent_total() const { return persistent_total_; }
  [[nodiscard]] std::size_t lanes_total() const;
  /// Bytes the next defragment() would give back.
  [[nodiscard]] std::size_t reclaimable() const;
  /// The safety condition. Admissions keep it; only lowering the capacity can break it.
  [[nodiscard]] bool safe() const;
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  /// A budget change: admitted jobs stay (nothing is evicted); later admissions see it.
  void set_capacity(std::size_t capacity) { capacity_ = capacity; }

 private:
  struct member {
    std::size_t lane = 0;
    std::size_t persistent = 0;
    std::size_t ephemeral = 0;
  };

  lane& lane_by_id(std::size_t id);
  std::size_t largest_need(const lane& l) const;
  void lay_out();

  std::size_t capacity_;
  std::size_t max_lanes_;
  std::size_t persistent_total_ = 0;
  std::size_t next_lane_id_ = 0;
  std::vector<lane> lanes_;  ///< in id order
  std::unordered_map<job_id, member> members_;
};

}  // namespace tandem::schedule
