#include "tandem/runtime/fault_injection.hpp"

namespace tandem::runtime {

std::optional<injected_fault> fault_for(const fault_plan& plan, const std::string& job) {
  for (const auto& fault : plan) {
    if (fault.job == job) return fault;
  }
  return std::nullopt;
}

}  // namespace tandem::runtime
