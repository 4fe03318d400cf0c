#include "integer_program.hpp"

#include <Cbc_C_Interface.h>

#include <algorithm>

namespace tandem::footprint::detail {

struct integer_program::solver {
  Cbc_Model* model = Cbc_newModel();
  solver() { Cbc_setLogLevel(model, 0); }
  ~solver() { Cbc_deleteModel(model); }
  solver(const solver&) = delete;
  solver& operator=(const solver&) = delete;
};

integer_program::integer_program() : solver_(std::make_unique<solver>()) {}
integer_program::~integer_program() = default;

int integer_program::binary(double cost) {
  Cbc_addCol(solver_->model, "", 0, 1, cost, 1, 0, nullptr, nullptr);
  return columns_++;
}

int integer_program::continuous(double lower, double upper, double cost) {
  Cbc_addCol(solver_->model, "", lower, upper, cost, 0, 0, nullptr, nullptr);
  return columns_++;
}

void integer_program::at_most(row r, double rhs) {
  if (r.columns.empty()) return;
  Cbc_addRow(solver_->model, "", static_cast<int>(r.columns.size()), r.columns.data(),
             r.values.data(), 'L', rhs);
}

bool integer_program::solve(double seconds, double gap) {
  auto* model = solver_->model;
  Cbc_setMaximumSeconds(model, std::max(seconds, 0.01));
  Cbc_setAllowableFractionGap(model, gap);
  Cbc_setParameter(model, "threads", "1");         // deterministic, and the machine is shared
  Cbc_setParameter(model, "timeMode", "elapsed");  // the limit is wall-clock seconds
  Cbc_setParameter(model, "preprocess", "off");
  Cbc_solve(model);
  return Cbc_getColSolution(model) != nullptr && !Cbc_isProvenInfeasible(model) &&
         Cbc_numberSavedSolutions(model) > 0;
}

double integer_program::value(int column) const {
  return Cbc_getColSolution(solver_->model)[column];
}
double integer_program::objective() const {
  return Cbc_getObjValue(solver_->model);
}
double integer_program::bound() const {
  return Cbc_getBestPossibleObjValue(solver_->model);
}
bool integer_program::proven_optimal() const {
  return Cbc_isProvenOptimal(solver_->model) != 0;
}

}  // namespace tandem::footprint::detail
