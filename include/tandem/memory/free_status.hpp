#pragma once
// The outcome of a free. Deallocation never throws: a free the pool refuses leaves the pool
// untouched, is counted in the stats and is reported to the pool's diagnostic handler.

#include <cstdint>

namespace tandem::memory {

enum class free_status : std::uint8_t {
  ok,
  null_pointer,     ///< freeing nullptr: ignored, as free(nullptr) is
  foreign_pointer,  ///< not inside the pool's memory
  not_allocated,    ///< inside the pool but not the start of a live block (double free?)
  wrong_job,        ///< the block belongs to another job
  unknown_job,      ///< the job id is not registered
};

constexpr const char* to_string(free_status status) {
  switch (status) {
    case free_status::ok:
      return "ok";
    case free_status::null_pointer:
      return "null pointer";
    case free_status::foreign_pointer:
      return "foreign pointer (not from this pool)";
    case free_status::not_allocated:
      return "not a live allocation (double free?)";
    case free_status::wrong_job:
      return "freed by a job that does not own it";
    case free_status::unknown_job:
      return "unknown job";
  }
  return "invalid";
}

}  // namespace tandem::memory
