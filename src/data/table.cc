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

}  // namespace tabforge::data
