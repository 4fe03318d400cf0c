#include "tandem/schedule/admission.hpp"

namespace tandem::schedule {

bool newcomer_admission::admits(std::size_t budget_bytes) const {
  if (held_ == 0 || largest_peak_ == 0) return true;  // nothing held, or nothing to make room for
  return fits_beside(held_, largest_peak_, budget_bytes);
}

}  // namespace tandem::schedule
