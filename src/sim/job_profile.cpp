#include "tandem/sim/job_profile.hpp"

#include <numeric>

namespace tandem::sim {

double job_profile::solo_iteration_s() const {
  double total = 0;
  for (const auto& op : operations) total += op.solo_s;
  return total;
}

std::size_t job_profile::persistent_bytes() const {
  return std::accumulate(persistent_tensors.begin(), persistent_tensors.end(), std::size_t{0});
}

}  // namespace tandem::sim
