#include "data/problem_type.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace tabforge::data {
namespace {

constexpr std::int64_t kMulticlassUpperLimit = 1000;

// Distinct present values of the label with their counts, in AutoGluon's class order.
struct ClassCounts {
  std::vector<std::string> names;
  std::vector<std::int64_t> counts;
  bool integral = true;  // numeric labels: every value is a whole number
};

ClassCounts CountClasses(const Column& column) {
  ClassCounts out;
  switch (column.type()) {
    case ColumnType::kNumeric: {
      std::map<double, std::int64_t> counts;
      for (double value : column.numeric()) {
        if (std::isnan(value)) continue;
        ++counts[value];
        out.integral = out.integral && value == std::floor(value);
      }
      for (const auto& [value, count] : counts) {
        out.names.push_back(fmt::format("{}", value));
        out.counts.push_back(count);
      }
      break;
    }
    case ColumnType::kCategorical:
    case ColumnType::kText: {
      std::vector<std::int64_t> per_code(static_cast<std::size_t>(column.dictionary().size()));
      for (std::int32_t code : column.codes()) {
        if (code != kMissingCode) ++per_code[code];
      }
      std::vector<std::int32_t> order;
      for (std::int32_t code = 0; code < column.dictionary().size(); ++code) {
        if (per_code[code] > 0) order.push_back(code);
      }
      std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        return column.dictionary()[a] < column.dictionary()[b];
      });
      for (std::int32_t code : order) {
        out.names.emplace_back(column.dictionary()[code]);
        out.counts.push_back(per_code[code]);
      }
      break;
    }
    case ColumnType::kBoolean: {
      std::int64_t counts[2] = {0, 0};
      for (std::int8_t value : column.booleans()) {
        if (value != kMissingBool) ++counts[value];
      }
      for (int value = 0; value < 2; ++value) {
        if (counts[value] == 0) continue;
        out.names.push_back(value ? "True" : "False");
        out.counts.push_back(counts[value]);
      }
      break;
    }
    case ColumnType::kDatetime:
      break;
  }
  return out;
}

}  // namespace

ProblemType ParseProblemType(std::string_view name) {
  for (ProblemType type :
       {ProblemType::kBinary, ProblemType::kMulticlass, ProblemType::kRegression}) {
    if (name == ProblemTypeName(type)) return type;
  }
  throw InvalidInput(fmt::format(
      "unknown problem type '{}'; valid problem types are binary, multiclass and regression.",
      name));
}

LabelSummary AnalyzeLabel(const Table& table, std::string_view label,
                          std::optional<ProblemType> forced) {
  int index = table.FindColumn(label);
  if (index < 0) {
    std::string names;
    for (const std::string& name : table.ColumnNames()) {
      names += (names.empty() ? "'" : ", '") + name + "'";
    }
    throw InvalidInput(fmt::format(
        "the label column '{}' does not exist; the columns are: {}. Pass one of them with "
        "--label (names are case-sensitive).",
        label, names));
  }
  const Column& column = table.column(index);
  if (column.type() == ColumnType::kDatetime) {
    throw InvalidInput(
        fmt::format("the label column '{}' holds dates; tabforge predicts "
                    "numbers or classes. Choose another label column.",
                    label));
  }
  LabelSummary summary;
  summary.label = std::string(label);
  summary.rows = column.size();
  summary.missing = column.MissingCount();
  const std::int64_t present = summary.rows - summary.missing;
  ClassCounts classes = CountClasses(column);
  const auto distinct = static_cast<std::int64_t>(classes.names.size());
  if (distinct < 2) {
    throw InvalidInput(fmt::format(
        "the label column '{}' has {} distinct value{}{}; a model needs at least two "
        "different labels to learn from. Check that this is the right label column.",
        label, distinct, distinct == 1 ? "" : "s",
        distinct == 1 ? " ('" + classes.names.front() + "')" : std::string(" (all missing)")));
  }

  const bool numeric = column.type() == ColumnType::kNumeric;
  const double threshold = present > 1000 ? 0.05 : 0.1;
  const double unique_ratio = double(distinct) / double(present);
  if (forced) {
    summary.problem_type = *forced;
    summary.inferred = false;
    summary.reason = "set by the caller";
  } else if (distinct == 2) {
    summary.problem_type = ProblemType::kBinary;
    summary.reason = "the label has exactly two distinct values";
  } else if (!numeric) {
    summary.problem_type = ProblemType::kMulticlass;
    summary.reason = fmt::format("the label is non-numeric with {} distinct values", distinct);
  } else if (classes.integral && unique_ratio <= threshold && distinct <= kMulticlassUpperLimit) {
    summary.problem_type = ProblemType::kMulticlass;
    summary.reason = fmt::format(
        "the label is integer-valued with {} distinct values ({:.2f}% of the rows, at most "
        "{:.0f}%)",
        distinct, 100 * unique_ratio, 100 * threshold);
  } else {
    summary.problem_type = ProblemType::kRegression;
    summary.reason = !classes.integral
                         ? std::string("the label is numeric with fractional values")
                         : fmt::format(
                               "the label is numeric with {} distinct values ({:.2f}% "
                               "of the rows, more than {:.0f}%{})",
                               distinct, 100 * unique_ratio, 100 * threshold,
                               distinct > kMulticlassUpperLimit ? ", or over 1000" : "");
  }

  if (summary.problem_type == ProblemType::kRegression) {
    if (!numeric) {
      throw InvalidInput(fmt::format(
          "problem type regression needs a numeric label, but '{}' holds text such as '{}'. "
          "Use --problem-type binary or multiclass, or choose a numeric label.",
          label, classes.names.front()));
    }
    double sum = 0, sum_squares = 0;
    summary.min = INFINITY;
    summary.max = -INFINITY;
    for (double value : column.numeric()) {
      if (std::isnan(value)) continue;
      sum += value;
      sum_squares += value * value;
      summary.min = std::min(summary.min, value);
      summary.max = std::max(summary.max, value);
    }
    summary.mean = sum / double(present);
    summary.stddev =
        std::sqrt(std::max(0.0, sum_squares / double(present) - summary.mean * summary.mean));
    return summary;
  }
  if (summary.problem_type == ProblemType::kBinary && distinct != 2) {
    throw InvalidInput(
        fmt::format("problem type binary needs exactly two classes, but the label '{}' has {}. Use "
                    "--problem-type multiclass.",
                    label, distinct));
  }
  summary.classes = std::move(classes.names);
  summary.class_counts = std::move(classes.counts);
  if (summary.problem_type == ProblemType::kBinary) summary.positive_class = summary.classes[1];
  return summary;
}

}  // namespace tabforge::data
