#pragma once
// A job's losses, iteration by iteration: what the runtime tests compare bitwise with the same
// job's run alone.

#include <vector>

#include "tandem/runtime/results.hpp"

namespace tandem::runtime::testing {

inline std::vector<double> losses_of(const job_result& job) {
  std::vector<double> losses;
  for (const auto& record : job.iteration_log) losses.push_back(record.loss);
  return losses;
}

}  // namespace tandem::runtime::testing
