#include "tandem/schedule/counter_barrier.hpp"

#include "tandem/common/error.hpp"

namespace tandem::schedule {

void counter_barrier::open(const std::vector<job_id>& members) {
  TANDEM_EXPECTS(is_open(), usage_error,
                 "a step opened while the previous one still waits for " +
                     std::to_string(pending_.size()) + " job(s)");
  pending_.insert(members.begin(), members.end());
  ++steps_;
}

bool counter_barrier::arrive(job_id job) {
  return pending_.erase(job) == 1 && pending_.empty();
}

bool counter_barrier::remove(job_id job) {
  return arrive(job);
}

}  // namespace tandem::schedule
