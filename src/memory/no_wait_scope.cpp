#include "tandem/memory/no_wait_scope.hpp"

#include <utility>

namespace tandem::memory {

namespace {
thread_local bool no_wait = false;
}  // namespace

no_wait_scope::no_wait_scope() : before_(std::exchange(no_wait, true)) {}

no_wait_scope::~no_wait_scope() {
  no_wait = before_;
}

bool no_wait_scope::here() {
  return no_wait;
}

}  // namespace tandem::memory
