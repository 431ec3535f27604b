// Per-column statistics and the type decisions made from them: text versus categorical for
// string columns, the ID flag, missing fraction and distinct count (what `inspect` shows).
#pragma once

#include <cstdint>
#include <vector>

#include "data/table.h"

namespace tabforge::data {

// Text or categorical for a dictionary-encoded string column, by AutoGluon's rule for free
// text: over up to 5000 evenly spaced rows, more than 1% distinct values and an average of at
// least 3 words per distinct value means text; anything else is categorical.
ColumnType ClassifyStringColumn(const Column& column);

struct ColumnStats {
  std::int64_t rows = 0;
  std::int64_t missing = 0;
  std::int64_t distinct = 0;  // distinct present values
  // Every row has a value and no value repeats, for strings and for integer-valued numbers
  // (row numbers, keys); continuous floats are never flagged.
  bool is_id = false;
  double MissingFraction() const { return rows == 0 ? 0.0 : double(missing) / double(rows); }
};

// Statistics of one column (distinct counts are exact).
ColumnStats ComputeColumnStats(const Column& column);

// Statistics of every column, columns in parallel on `threads` threads (0 = all).
std::vector<ColumnStats> ComputeTableStats(const Table& table, int threads = 0);

}  // namespace tabforge::data
