#include "data/column_stats.h"

#include <algorithm>
#include <cmath>

#include "core/context.h"
#include "core/strings.h"

namespace tabforge::data {

ColumnType ClassifyStringColumn(const Column& column) {
  const std::vector<std::int32_t>& codes = column.codes();
  const std::int64_t rows = static_cast<std::int64_t>(codes.size());
  if (rows == 0) return ColumnType::kCategorical;
  constexpr std::int64_t kSampleRows = 5000;
  const std::int64_t sampled = std::min(rows, kSampleRows);
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(column.dictionary().size()), 0);
  std::int64_t distinct = 0;
  bool missing_seen = false;
  std::int64_t words = 0;
  for (std::int64_t index = 0; index < sampled; ++index) {
    std::int64_t row = index * rows / sampled;
    std::int32_t code = codes[row];
    if (code == kMissingCode) {
      // AutoGluon counts missing as one of the unique values but not in the word average.
      if (!missing_seen) ++distinct;
      missing_seen = true;
      continue;
    }
    if (seen[code]) continue;
    seen[code] = 1;
    ++distinct;
    words += CountWords(column.dictionary()[code]);
  }
  const std::int64_t present_distinct = distinct - (missing_seen ? 1 : 0);
  if (present_distinct == 0) return ColumnType::kCategorical;
  const double unique_ratio = double(distinct) / double(sampled);
  const double average_words = double(words) / double(present_distinct);
  return unique_ratio > 0.01 && average_words >= 3.0 ? ColumnType::kText : ColumnType::kCategorical;
}

ColumnStats ComputeColumnStats(const Column& column) {
  ColumnStats stats;
  stats.rows = column.size();
  stats.missing = column.MissingCount();
  switch (column.type()) {
    case ColumnType::kNumeric: {
      std::vector<double> values;
      values.reserve(static_cast<std::size_t>(stats.rows - stats.missing));
      bool integral = true;
      for (double value : column.numeric()) {
        if (std::isnan(value)) continue;
        values.push_back(value);
        integral = integral && value == std::floor(value);
      }
      std::sort(values.begin(), values.end());
      stats.distinct = std::unique(values.begin(), values.end()) - values.begin();
      stats.is_id =
          integral && stats.missing == 0 && stats.distinct == stats.rows && stats.rows > 1;
      break;
    }
    case ColumnType::kCategorical:
    case ColumnType::kText: {
      std::vector<std::uint8_t> used(static_cast<std::size_t>(column.dictionary().size()), 0);
      for (std::int32_t code : column.codes()) {
        if (code != kMissingCode) used[code] = 1;
      }
      stats.distinct = std::count(used.begin(), used.end(), 1);
      stats.is_id = stats.missing == 0 && stats.distinct == stats.rows && stats.rows > 1;
      break;
    }
    case ColumnType::kDatetime: {
      std::vector<std::int64_t> values;
      for (std::int64_t value : column.datetimes()) {
        if (value != kMissingDatetime) values.push_back(value);
      }
      std::sort(values.begin(), values.end());
      stats.distinct = std::unique(values.begin(), values.end()) - values.begin();
      break;
    }
    case ColumnType::kBoolean: {
      bool seen[2] = {false, false};
      for (std::int8_t value : column.booleans()) {
        if (value != kMissingBool) seen[value] = true;
      }
      stats.distinct = int(seen[0]) + int(seen[1]);
      break;
    }
  }
  return stats;
}

std::vector<ColumnStats> ComputeTableStats(const Table& table, int threads) {
  Context context;
  context.num_threads = threads;
  std::vector<ColumnStats> stats(static_cast<std::size_t>(table.num_columns()));
#pragma omp parallel for num_threads(context.Threads()) schedule(dynamic, 1)
  for (int index = 0; index < table.num_columns(); ++index) {
    stats[index] = ComputeColumnStats(table.column(index));
  }
  return stats;
}

}  // namespace tabforge::data
