// Inferring the problem type from the label column, as AutoGluon does, and summarising the
// label (classes and their counts, the positive class, or the value range).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "data/table.h"

namespace tabforge::data {

// "binary", "multiclass" or "regression" (AutoGluon's names); throws InvalidInput listing the
// valid names otherwise.
ProblemType ParseProblemType(std::string_view name);

struct LabelSummary {
  std::string label;  // the label column's name
  ProblemType problem_type = ProblemType::kRegression;
  bool inferred = true;      // false when the caller fixed the problem type
  std::string reason;        // why this problem type, in one sentence
  std::int64_t rows = 0;     // rows in the table
  std::int64_t missing = 0;  // rows whose label is missing (they cannot be used to train)

  // Classification: the classes in AutoGluon's order (sorted: numerically for numbers, by
  // bytes for strings, False before True), with their counts; the positive class of a binary
  // problem is the last one.
  std::vector<std::string> classes;
  std::vector<std::int64_t> class_counts;
  std::string positive_class;  // binary only

  // Regression: the range of the present values.
  double min = 0, max = 0, mean = 0, stddev = 0;
};

// Analyses column `label` of `table`. With `forced` empty the problem type is inferred:
// binary for exactly two distinct values; multiclass for string/boolean labels with more, or
// for integer-valued numbers with at most 1000 distinct values that are at most 5% of the rows
// (10% when there are 1000 rows or fewer); regression otherwise. Throws InvalidInput when the
// column does not exist (listing those that do), has fewer than two distinct values, or does
// not fit a forced problem type.
LabelSummary AnalyzeLabel(const Table& table, std::string_view label,
                          std::optional<ProblemType> forced = std::nullopt);

}  // namespace tabforge::data
