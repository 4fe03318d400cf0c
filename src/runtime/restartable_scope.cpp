#include "tandem/runtime/restartable_scope.hpp"

#include "tandem/runtime/policy_gate.hpp"

namespace tandem::runtime {

void restartable_scope::throw_if_kept() {
  if (!kept_) return;
  kept_ = false;
  throw iteration_restarted(
      "a restart chosen inside an operation callback: the iteration lets go before its update");
}

}  // namespace tandem::runtime
