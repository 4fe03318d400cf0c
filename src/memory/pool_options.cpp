#include "tandem/memory/pool_options.hpp"

#include <string>

#include "tandem/common/error.hpp"

namespace tandem::memory {

void pool_options::validate() const {
  auto check = [](bool ok, const std::string& message) {
    TANDEM_EXPECTS(ok, config_error, message);
  };
  check(is_power_of_two(region_size) && region_size >= 2 * MiB,
        "region_size must be a power of two of at least 2 MiB (got " + format_bytes(region_size) +
            "); Zico uses 64 MiB");
  check(capacity >= region_size, "capacity (" + format_bytes(capacity) +
                                     ") must hold at least one region of " +
                                     format_bytes(region_size));
  check(effective_budget() <= capacity, "budget (" + format_bytes(budget) + ") exceeds capacity (" +
                                            format_bytes(capacity) +
                                            "); lower the budget or raise the capacity");
  check(is_power_of_two(granularity) && granularity >= 256 && granularity <= region_size,
        "granularity must be a power of two between 256 B and the region size (got " +
            format_bytes(granularity) + ")");
  check(small_threshold <= region_size, "small_threshold (" + format_bytes(small_threshold) +
                                            ") must not exceed region_size (" +
                                            format_bytes(region_size) + ")");
  check(event_granularity > 0, "event_granularity must be positive; 8 MiB is Zico's default");
  check(max_jobs > 0 && max_jobs < (std::size_t{1} << 20),
        "max_jobs must be between 1 and 1048575 (got " + std::to_string(max_jobs) + ")");
}

}  // namespace tandem::memory
