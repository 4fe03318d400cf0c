#pragma once
// The typed out-of-memory error, distinct from every other failure so that callers (a policy, a
// baseline that is allowed to fail) can catch exactly it.

#include <cstddef>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/memory/alloc_kind.hpp"
#include "tandem/memory/trace.hpp"

namespace tandem::memory {

/// What the pool looked like when a request was refused.
struct oom_report {
  std::string job_name;
  job_id job = 0;
  std::size_t requested_bytes = 0;  ///< after rounding
  alloc_kind kind = alloc_kind::unknown;
  std::size_t job_live_bytes = 0;
  std::size_t job_reserved_bytes = 0;
  std::size_t job_unsynced_bytes = 0;  ///< freed by the job, still pending on the device
  std::size_t job_limit = 0;           ///< the job's own partition, 0 when it has none
  std::size_t pool_reserved_bytes = 0;
  std::size_t free_regions = 0;
  std::size_t largest_free_run_bytes = 0;
  std::size_t budget = 0;
  std::size_t capacity = 0;
  std::size_t region_size = 0;
  /// Set when the refusal did not come from the pool (an injected fault): says why instead of
  /// the pool's figures.
  std::string cause;
  /// Refused under a no_wait_scope (no_wait_scope.hpp): put off, nothing waited for; the
  /// caller tries again later. Any other refusal is the job's out-of-memory failure.
  bool put_off = false;

  /// A few lines for people: the numbers above and the setting to change.
  [[nodiscard]] std::string describe() const;
};

class out_of_memory_error : public error {
 public:
  explicit out_of_memory_error(oom_report report);
  [[nodiscard]] const oom_report& report() const { return report_; }

 private:
  oom_report report_;
};

}  // namespace tandem::memory
