#pragma once
// Error channels of tandem (see docs/ARCHITECTURE.md, "Errors").
//
// 1. Typed exceptions for users: every message names the problem and what to do about it, and
//    carries the file:line where it was raised. Catch `tandem::error` for all of them.
// 2. Assertions (TANDEM_ASSERT) for internal invariants: a failed assertion is a tandem bug, never
//    a user error, and aborts with the condition and location.
//
// Deallocation never throws; invalid frees are reported through `memory::free_status`.

#include <stdexcept>
#include <string>

namespace tandem {

/// Base of every exception tandem throws on purpose.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A caller broke an API contract (bad argument, wrong order of calls, unknown handle).
class usage_error : public error {
 public:
  using error::error;
};

/// Input from outside the program (a file, a flag, an option value) is invalid.
class config_error : public error {
 public:
  using error::error;
};

/// The device or its driver failed (a CUDA call returned an error, a reservation failed).
class device_error : public error {
 public:
  using error::error;
};

namespace detail {
[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const std::string& message);
std::string located(const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace tandem

/// Throws `exception_type` with `message` and the location unless `condition` holds.
#define TANDEM_EXPECTS(condition, exception_type, message)                            \
  do {                                                                                \
    if (!(condition)) [[unlikely]] {                                                  \
      throw exception_type(::tandem::detail::located(__FILE__, __LINE__, (message))); \
    }                                                                                 \
  } while (false)

/// Throws `exception_type` with `message` and the location.
#define TANDEM_FAIL(exception_type, message) \
  throw exception_type(::tandem::detail::located(__FILE__, __LINE__, (message)))

/// Internal invariant, checked in every build: cheap checks only.
#define TANDEM_ASSERT(condition, message)                                            \
  do {                                                                               \
    if (!(condition)) [[unlikely]] {                                                 \
      ::tandem::detail::assertion_failed(#condition, __FILE__, __LINE__, (message)); \
    }                                                                                \
  } while (false)

/// Internal invariant whose check costs real time (walks a structure); only in debug builds
/// and when TANDEM_EXPENSIVE_CHECKS is defined.
#if defined(TANDEM_EXPENSIVE_CHECKS)
#define TANDEM_EXPENSIVE_ASSERT(condition, message) TANDEM_ASSERT(condition, message)
#else
#define TANDEM_EXPENSIVE_ASSERT(condition, message) \
  do {                                              \
  } while (false)
#endif
