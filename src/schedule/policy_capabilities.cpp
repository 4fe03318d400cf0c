#include "tandem/schedule/policy_capabilities.hpp"

namespace tandem::schedule {

policy_capabilities capabilities_of(policy& p) {
  return {dynamic_cast<group_gating*>(&p),     dynamic_cast<memory_partitioning*>(&p),
          dynamic_cast<explains_waiting*>(&p), dynamic_cast<reports_statistics*>(&p),
          dynamic_cast<reads_progress*>(&p),   dynamic_cast<borrow_arbiter*>(&p),
          dynamic_cast<fails_on_oom*>(&p),     dynamic_cast<chooses_footprint*>(&p)};
}

}  // namespace tandem::schedule
