// A columnar table: named, typed columns of equal length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/column.h"

namespace tabforge::data {

class Table {
 public:
  Table() = default;

  std::int64_t num_rows() const { return columns_.empty() ? 0 : columns_.front().size(); }
  int num_columns() const { return static_cast<int>(columns_.size()); }

  Column& column(int index) { return columns_[index]; }
  const Column& column(int index) const { return columns_[index]; }
  const std::vector<Column>& columns() const { return columns_; }

  // Index of the column named `name`, or -1.
  int FindColumn(std::string_view name) const;
  // The column named `name`; throws InvalidInput naming the columns that do exist.
  const Column& ColumnByName(std::string_view name) const;
  int ColumnIndex(std::string_view name) const;

  // Appends a column. Its length must equal num_rows() unless the table is empty, and its
  // name must be new; violations are InternalError (callers validate user input first).
  void AddColumn(Column column);

  // Column names, in order.
  std::vector<std::string> ColumnNames() const;

  // Bytes held by all columns.
  std::size_t MemoryBytes() const;

 private:
  std::vector<Column> columns_;
};

// The rows `rows` of `table` (any order, repeats allowed) as a new table with the same columns;
// categorical and text columns keep their dictionaries, so codes mean the same in both.
Table SelectRows(const Table& table, const std::vector<std::int64_t>& rows);

}  // namespace tabforge::data
