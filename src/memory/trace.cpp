#include "tandem/memory/trace.hpp"

namespace tandem::memory {

const char* to_string(trace_op op) {
  switch (op) {
    case trace_op::alloc:
      return "alloc";
    case trace_op::free:
      return "free";
    case trace_op::region_borrow:
      return "region_borrow";
    case trace_op::region_return:
      return "region_return";
    case trace_op::out_of_memory:
      return "out_of_memory";
  }
  return "invalid";
}

}  // namespace tandem::memory
