// Errors. Five kinds reach the user, one reports bugs (see STYLE.md, "Errors"):
//   InvalidInput  the user's data or options are wrong (names file/line/column/option + remedy)
//   IoError       a file or URL cannot be read or written
//   NotSupported  a valid request this build or device cannot do
//   CudaError     a CUDA runtime/driver call failed (names the call and the device)
//   InternalError a broken invariant: a bug in tabforge (thrown by TFG_CHECK)
// Expected outcomes (deadline reached, early stopping, fall-backs) are return values, not errors.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tabforge {

// Base of every exception tabforge throws; what() is the full user-facing message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

class InvalidInput : public Error {
 public:
  using Error::Error;
};

class IoError : public Error {
 public:
  using Error::Error;
};

class NotSupported : public Error {
 public:
  using Error::Error;
};

class CudaError : public Error {
 public:
  using Error::Error;
};

class InternalError : public Error {
 public:
  using Error::Error;
};

namespace detail {
// Builds the InternalError message "internal error at FILE:LINE: CONDITION: DETAIL" and throws it.
[[noreturn]] void ThrowCheckFailure(const char* file, int line, const char* condition,
                                    const std::string& detail);
}  // namespace detail

}  // namespace tabforge

// Always-on invariant check; throws InternalError with the source location. The format
// arguments are evaluated only when the check fails.
#define TFG_CHECK(cond, ...)                                                \
  do {                                                                      \
    if (!(cond)) [[unlikely]] {                                             \
      ::tabforge::detail::ThrowCheckFailure(__FILE__, __LINE__, #cond,      \
                                            ::fmt::format("" __VA_ARGS__)); \
    }                                                                       \
  } while (false)

// Debug-only check for hot loops.
#ifndef NDEBUG
#define TFG_DCHECK(cond, ...) TFG_CHECK(cond, __VA_ARGS__)
#else
#define TFG_DCHECK(cond, ...) \
  do {                        \
  } while (false)
#endif
