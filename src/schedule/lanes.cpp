#include "tandem/schedule/lanes.hpp"

#include <algorithm>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::schedule {

namespace {

/// The lane with id `id` among `lanes` (const or not); members' lanes always exist.
template <typename Lanes>
auto& find_lane(Lanes& lanes, std::size_t id) {
  const auto found =
      std::find_if(lanes.begin(), lanes.end(), [&](const lane& l) { return l.id == id; });
  TANDEM_ASSERT(found != lanes.end(), "a member's lane is gone");
  return *found;
}

}  // namespace

std::optional<std::size_t> lane_assignment::admit(job_id job, std::size_t persistent,
                                                  std::size_t ephemeral) {
  TANDEM_EXPECTS(!members_.contains(job), usage_error,
                 "job " + std::to_string(job) + " is admitted to a lane already");
  // Written so that it cannot overflow: persistent + ephemeral > capacity.
  TANDEM_EXPECTS(persistent <= capacity_ && ephemeral <= capacity_ - persistent, config_error,
                 "job " + std::to_string(job) + " needs " + format_bytes(persistent) +
                     " persistent + " + format_bytes(ephemeral) +
                     " ephemeral memory, more than "
                     "the capacity of " +
                     format_bytes(capacity_) +
                     " on its own; it can never run: raise the budget or shrink the job (a "
                     "smaller batch or model)");

  // What the safety condition counts once the job is in, before its lane: everything fits while
  // `committed + lane growth <= capacity_`.
  const std::size_t committed = persistent_total_ + persistent + lanes_total();
  const auto room = [&](std::size_t growth) {
    return committed <= capacity_ && growth <= capacity_ - committed;
  };
  const auto join = [&](std::size_t lane_id) {
    lane_by_id(lane_id).jobs.push_back(job);
    members_.emplace(job, member{lane_id, persistent, ephemeral});
    persistent_total_ += persistent;
    return lane_id;
  };

  // 1. A lane of its own.
  if (lanes_.size() < max_lanes_ && room(ephemeral)) {
    const std::size_t id = next_lane_id_++;
    lanes_.push_back({id, ephemeral, lanes_total(), {}});
    return join(id);
  }
  if (committed > capacity_) return std::nullopt;  // not even its persistent memory fits

  // 2. The smallest lane that is large enough.
  const lane* best = nullptr;
  for (const auto& l : lanes_) {
    if (l.size >= ephemeral && (best == nullptr || l.size < best->size)) best = &l;
  }
  if (best != nullptr) return join(best->id);

  // 3. Every lane is smaller than the job's need: share one lane with the m largest lanes merged
  // (m = 1: the largest grows). Each lane merged in frees its size; the merged lane costs
  // `ephemeral`, more than any of them.
  std::vector<const lane*> largest;
  largest.reserve(lanes_.size());
  for (const auto& l : lanes_) largest.push_back(&l);
  std::stable_sort(largest.begin(), largest.end(),
                   [](const lane* a, const lane* b) { return a->size > b->size; });
  std::size_t merged_bytes = 0;
  for (std::size_t m = 1; m <= largest.size(); ++m) {
    merged_bytes += largest[m - 1]->size;
    // committed - merged_bytes + ephemeral <= capacity_, with merged_bytes <= lanes_total().
    if (ephemeral > capacity_ - (committed - merged_bytes)) continue;
    // Ids from here on: erasing lanes moves what `largest` points to.
    const std::size_t target = largest.front()->id;
    std::vector<std::size_t> absorbed;
    for (std::size_t i = 1; i < m; ++i) absorbed.push_back(largest[i]->id);
    std::sort(absorbed.begin(), absorbed.end());
    const auto is_absorbed = [&](const lane& l) {
      return std::binary_search(absorbed.begin(), absorbed.end(), l.id);
    };
    auto& into = lane_by_id(target);
    into.size = ephemeral;
    for (const auto& l : lanes_) {
      if (!is_absorbed(l)) continue;
      for (const auto moved : l.jobs) {
        into.jobs.push_back(moved);
        members_.at(moved).lane = target;
      }
    }
    std::erase_if(lanes_, is_absorbed);
    lay_out();
    return join(target);
  }
  return std::nullopt;
}

void lane_assignment::release(job_id job) {
  const auto found = members_.find(job);
  TANDEM_EXPECTS(found != members_.end(), usage_error,
                 "job " + std::to_string(job) + " left but was never admitted to a lane");
  std::erase(lane_by_id(found->second.lane).jobs, job);
  persistent_total_ -= found->second.persistent;
  members_.erase(found);
}

void lane_assignment::defragment() {
  std::erase_if(lanes_, [](const lane& l) { return l.jobs.empty(); });
  for (auto& l : lanes_) l.size = largest_need(l);
  lay_out();
}

std::optional<std::size_t> lane_assignment::lane_of(job_id job) const {
  const auto found = members_.find(job);
  if (found == members_.end()) return std::nullopt;
  return found->second.lane;
}

const lane* lane_assignment::lane_holding(job_id job) const {
  const auto found = members_.find(job);
  if (found == members_.end()) return nullptr;
  return &find_lane(lanes_, found->second.lane);
}

std::size_t lane_assignment::lanes_total() const {
  std::size_t total = 0;
  for (const auto& l : lanes_) total += l.size;
  return total;
}

std::size_t lane_assignment::reclaimable() const {
  std::size_t bytes = 0;
  for (const auto& l : lanes_) bytes += l.size - largest_need(l);
  return bytes;
}

bool lane_assignment::safe() const {
  const std::size_t ephemeral = lanes_total();
  return persistent_total_ <= capacity_ && ephemeral <= capacity_ - persistent_total_;
}

lane& lane_assignment::lane_by_id(std::size_t id) {
  return find_lane(lanes_, id);
}

std::size_t lane_assignment::largest_need(const lane& l) const {
  std::size_t need = 0;
  for (const auto job : l.jobs) need = std::max(need, members_.at(job).ephemeral);
  return need;
}

void lane_assignment::lay_out() {
  std::size_t offset = 0;
  for (auto& l : lanes_) {
    l.offset = offset;
    offset += l.size;
  }
}

}  // namespace tandem::schedule
