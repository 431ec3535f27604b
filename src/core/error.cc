#include "core/error.h"

namespace tabforge::detail {

void ThrowCheckFailure(const char* file, int line, const char* condition,
                       const std::string& detail) {
  std::string message =
      fmt::format("internal error at {}:{}: check '{}' failed", file, line, condition);
  if (!detail.empty()) message += ": " + detail;
  message += " (this is a bug in tabforge; please report it with the command that caused it)";
  throw InternalError(message);
}

}  // namespace tabforge::detail
