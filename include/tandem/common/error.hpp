#pragma once
// Error channels of tandem (see docs/ARCHITECTURE.md, "Errors").
//
// 1. Typed exceptions for users: every message names the problem and what to do about it. The
//    file:line where it was raised is kept beside the message (error::location), not in it:
//    users read what() (`tandem --debug` adds the location). Catch `tandem::error` for all.
// 2. Assertions (TANDEM_ASSERT) for internal invariants: a failed assertion is a tandem bug, never
//    a user error, and aborts with the condition and location.
//
// Deallocation never throws; invalid frees are reported through `memory::free_status`.

#include <stdexcept>
#include <string>
#include <type_traits>

namespace tandem {

/// Base of every exception tandem throws on purpose.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  /// "src/common/units.cpp:32" for an error raised by TANDEM_EXPECTS or TANDEM_FAIL; empty
  /// for one made otherwise.
  [[nodiscard]] std::string location() const;
  /// What the macros call. `file` must outlive the error (__FILE__ does).
  void set_location(const char* file, int line) noexcept {
    file_ = file;
    line_ = line;
  }
  /// Where `other` was raised: for an error that restates `other` with more context.
  void set_location_of(const error& other) noexcept {
    file_ = other.file_;
    line_ = other.line_;
  }

 private:
  // A pointer and a number, not a string: copying an exception must not throw.
  const char* file_ = nullptr;
  int line_ = 0;
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

/// A file could not be read or written (a full disk, permission denied, a folder at the path).
class io_error : public error {
 public:
  using error::error;
};

namespace detail {
[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const std::string& message);
/// `exception` with the place it was raised, when it is a tandem::error.
template <typename Exception>
Exception raised_at(Exception exception, const char* file, int line) noexcept {
  if constexpr (std::is_base_of_v<error, Exception>) exception.set_location(file, line);
  return exception;
}
}  // namespace detail

}  // namespace tandem

/// Throws `exception_type` with `message` and the location unless `condition` holds.
#define TANDEM_EXPECTS(condition, exception_type, message)                            \
  do {                                                                                \
    if (!(condition)) [[unlikely]] {                                                  \
      throw ::tandem::detail::raised_at(exception_type(message), __FILE__, __LINE__); \
    }                                                                                 \
  } while (false)

/// Throws `exception_type` with `message` and the location.
#define TANDEM_FAIL(exception_type, message) \
  throw ::tandem::detail::raised_at(exception_type(message), __FILE__, __LINE__)

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
