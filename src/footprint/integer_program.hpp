#pragma once
// The exact planner's (optimal_planner.cpp) integer program: binary and continuous columns, rows
// of at most a right-hand side, minimized by COIN-OR CBC within a time limit. CBC stays behind
// this class, and solves in a child process (integer_program.cpp, Note [CBC in a child
// process]): an abort inside CBC is a solve that found nothing, never the end of tandem.

#include <memory>
#include <stop_token>
#include <vector>

namespace tandem::footprint::detail {

/// A row as index/value pairs.
struct row {
  std::vector<int> columns;
  std::vector<double> values;
  void add(int column, double value) {
    if (column < 0 || value == 0) return;
    columns.push_back(column);
    values.push_back(value);
  }
};

class integer_program {
 public:
  integer_program();
  ~integer_program();
  integer_program(const integer_program&) = delete;
  integer_program& operator=(const integer_program&) = delete;

  /// A column in {0, 1} costing `cost` when 1; returns its index.
  int binary(double cost);
  /// A column in [lower, upper] costing `cost` per unit; returns its index.
  int continuous(double lower, double upper, double cost);
  /// The row's sum is at most `rhs`; an empty row is dropped.
  void at_most(row r, double rhs);

  /// Solves within `seconds` (and a grace); false when no feasible solution was found, CBC
  /// died or overran, or `stop` was requested (CBC's process is ended at once: Ctrl-C does not
  /// wait for the time limit). Throws tandem::error when no process can be started for it.
  bool solve(double seconds, double gap, std::stop_token stop = {});
  /// The solution's; only after `solve` returned true.
  [[nodiscard]] double value(int column) const;
  [[nodiscard]] double objective() const { return objective_; }
  [[nodiscard]] double bound() const { return bound_; }
  [[nodiscard]] bool proven_optimal() const { return proven_optimal_; }

 private:
  enum class child_outcome { found, found_nothing, died, overran, stopped };
  child_outcome solve_in_child(double seconds, const std::stop_token& stop);

  struct solver;  // CBC's model, behind its C interface
  std::unique_ptr<solver> solver_;
  int columns_ = 0;
  std::vector<double> values_;
  double objective_ = 0;
  double bound_ = 0;
  bool proven_optimal_ = false;
};

}  // namespace tandem::footprint::detail
