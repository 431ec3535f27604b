// Small vocabulary types shared by every folder.
#pragma once

#include <string_view>

namespace tabforge {

// The kind of prediction problem, with AutoGluon's names ("binary", "multiclass", "regression").
enum class ProblemType { kBinary, kMulticlass, kRegression };

// AutoGluon's name of a problem type.
constexpr std::string_view ProblemTypeName(ProblemType type) {
  switch (type) {
    case ProblemType::kBinary:
      return "binary";
    case ProblemType::kMulticlass:
      return "multiclass";
    case ProblemType::kRegression:
      return "regression";
  }
  return "unknown";
}

}  // namespace tabforge
