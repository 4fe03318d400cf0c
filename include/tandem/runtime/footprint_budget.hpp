#pragma once
// The budget a job's footprint plan is made for: `plan_budget` in a workload's [[job]] and
// `tandem plan --budget`. A share of the job's vanilla peak (the most its iteration holds with
// nothing swapped or recomputed), or a size.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem::runtime {

struct footprint_budget {
  /// Of the vanilla peak, above 0 and at most 100; 0 when the budget is `bytes`.
  double percent = 0;
  std::size_t bytes = 0;  ///< above 0 when the budget is a size
  friend bool operator==(const footprint_budget&, const footprint_budget&) = default;

  /// The budget in bytes for a job whose vanilla peak is `vanilla_peak_bytes`.
  [[nodiscard]] std::size_t bytes_for(std::size_t vanilla_peak_bytes) const;
  /// "75% of the vanilla peak", "1.00 GiB".
  [[nodiscard]] std::string describe() const;
};

/// "75%", "62.5%" (above 0, at most 100), or a size ("1GiB", "512MiB", "4096"; above 0).
/// Throws config_error naming the text and the forms it takes.
[[nodiscard]] footprint_budget parse_footprint_budget(std::string_view text);
/// A whole number of bytes (a workload's `plan_budget = 1073741824`); config_error for 0.
[[nodiscard]] footprint_budget footprint_budget_of_bytes(std::int64_t bytes);

}  // namespace tandem::runtime
