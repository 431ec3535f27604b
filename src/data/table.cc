#include "data/table.h"

#include "core/error.h"

namespace tabforge::data {

int Table::FindColumn(std::string_view name) const {
  for (int index = 0; index < num_columns(); ++index) {
    if (columns_[index].name() == name) return index;
  }
  return -1;
}

int Table::ColumnIndex(std::string_view name) const {
  int index = FindColumn(name);
  if (index >= 0) return index;
  std::string names;
  for (const Column& column : columns_) {
    if (!names.empty()) names += ", ";
    names += "'" + column.name() + "'";
  }
  throw InvalidInput(fmt::format(
      "there is no column named '{}'; the columns are: {}. Check the spelling and case of the "
      "name (column names are case-sensitive).",
      name, names));
}

const Column& Table::ColumnByName(std::string_view name) const {
  return columns_[ColumnIndex(name)];
}

void Table::AddColumn(Column column) {
  TFG_CHECK(columns_.empty() || column.size() == num_rows(),
            "column '{}' has {} rows, the table {}", column.name(), column.size(), num_rows());
  TFG_CHECK(FindColumn(column.name()) < 0, "duplicate column name '{}'", column.name());
  columns_.push_back(std::move(column));
}

std::vector<std::string> Table::ColumnNames() const {
  std::vector<std::string> names;
  names.reserve(columns_.size());
  for (const Column& column : columns_) names.push_back(column.name());
  return names;
}

std::size_t Table::MemoryBytes() const {
  std::size_t bytes = 0;
  for (const Column& column : columns_) bytes += column.MemoryBytes();
  return bytes;
}

namespace {

template <typename Value>
void Gather(const std::vector<Value>& from, const std::vector<std::int64_t>& rows,
            std::vector<Value>& to) {
  to.resize(rows.size());
  for (std::size_t at = 0; at < rows.size(); ++at) to[at] = from[rows[at]];
}

}  // namespace

Table SelectRows(const Table& table, const std::vector<std::int64_t>& rows) {
  for (std::int64_t row : rows) {
    TFG_CHECK(row >= 0 && row < table.num_rows(), "row {} outside a table of {} rows", row,
              table.num_rows());
  }
  Table out;
  for (const Column& column : table.columns()) {
    Column copy(column.name(), column.type());
    switch (column.type()) {
      case ColumnType::kNumeric:
        Gather(column.numeric(), rows, copy.numeric());
        break;
      case ColumnType::kCategorical:
      case ColumnType::kText:
        copy.dictionary() = column.dictionary();
        Gather(column.codes(), rows, copy.codes());
        break;
      case ColumnType::kDatetime:
        Gather(column.datetimes(), rows, copy.datetimes());
        break;
      case ColumnType::kBoolean:
        Gather(column.booleans(), rows, copy.booleans());
        break;
    }
    out.AddColumn(std::move(copy));
  }
  return out;
}

}  // namespace tabforge::data
