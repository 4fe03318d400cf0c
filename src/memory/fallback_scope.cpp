#include "tandem/memory/fallback_scope.hpp"

#include <utility>

namespace tandem::memory {

namespace {
thread_local bool falls_back = false;
}  // namespace

fallback_scope::fallback_scope() : before_(std::exchange(falls_back, true)) {}

fallback_scope::~fallback_scope() {
  falls_back = before_;
}

bool fallback_scope::here() {
  return falls_back;
}

}  // namespace tandem::memory
