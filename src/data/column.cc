#include "data/column.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "data/datetime.h"

namespace tabforge::data {
namespace {

// 64-bit FNV-1a followed by a final mix; good enough spread for open addressing.
std::uint64_t HashBytes(std::string_view value) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char byte : value) {
    hash = (hash ^ byte) * 1099511628211ull;
  }
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdull;
  hash ^= hash >> 33;
  return hash;
}

}  // namespace

std::string_view ColumnTypeName(ColumnType type) {
  switch (type) {
    case ColumnType::kNumeric:
      return "numeric";
    case ColumnType::kCategorical:
      return "categorical";
    case ColumnType::kText:
      return "text";
    case ColumnType::kDatetime:
      return "datetime";
    case ColumnType::kBoolean:
      return "boolean";
  }
  return "unknown";
}

std::int32_t StringDictionary::Find(std::string_view value) const {
  if (slots_.empty()) return kMissingCode;
  std::size_t mask = slots_.size() - 1;
  for (std::size_t slot = HashBytes(value) & mask;; slot = (slot + 1) & mask) {
    std::int32_t id = slots_[slot];
    if (id < 0) return kMissingCode;
    if ((*this)[id] == value) return id;
  }
}

std::int32_t StringDictionary::Insert(std::string_view value) {
  if (static_cast<std::size_t>(size() + 1) * 2 > slots_.size()) Grow();
  std::size_t mask = slots_.size() - 1;
  std::size_t slot = HashBytes(value) & mask;
  for (;; slot = (slot + 1) & mask) {
    std::int32_t id = slots_[slot];
    if (id < 0) break;
    if ((*this)[id] == value) return id;
  }
  TFG_CHECK(size() < std::numeric_limits<std::int32_t>::max() - 1,
            "more than 2^31 distinct strings in one column");
  std::int32_t id = size();
  bytes_.append(value);
  offsets_.push_back(bytes_.size());
  slots_[slot] = id;
  return id;
}

void StringDictionary::Grow() {
  std::size_t capacity = slots_.empty() ? 16 : slots_.size() * 2;
  slots_.assign(capacity, -1);
  std::size_t mask = capacity - 1;
  for (std::int32_t id = 0; id < size(); ++id) {
    std::size_t slot = HashBytes((*this)[id]) & mask;
    while (slots_[slot] >= 0) slot = (slot + 1) & mask;
    slots_[slot] = id;
  }
}

std::size_t StringDictionary::MemoryBytes() const {
  return bytes_.capacity() + offsets_.capacity() * sizeof(std::uint64_t) +
         slots_.capacity() * sizeof(std::int32_t);
}

std::int64_t Column::size() const {
  switch (type_) {
    case ColumnType::kNumeric:
      return static_cast<std::int64_t>(numeric_.size());
    case ColumnType::kCategorical:
    case ColumnType::kText:
      return static_cast<std::int64_t>(codes_.size());
    case ColumnType::kDatetime:
      return static_cast<std::int64_t>(datetimes_.size());
    case ColumnType::kBoolean:
      return static_cast<std::int64_t>(booleans_.size());
  }
  return 0;
}

bool Column::IsMissing(std::int64_t row) const {
  switch (type_) {
    case ColumnType::kNumeric:
      return std::isnan(numeric_[row]);
    case ColumnType::kCategorical:
    case ColumnType::kText:
      return codes_[row] == kMissingCode;
    case ColumnType::kDatetime:
      return datetimes_[row] == kMissingDatetime;
    case ColumnType::kBoolean:
      return booleans_[row] == kMissingBool;
  }
  return false;
}

std::int64_t Column::MissingCount() const {
  std::int64_t missing = 0;
  std::int64_t rows = size();
  for (std::int64_t row = 0; row < rows; ++row) missing += IsMissing(row) ? 1 : 0;
  return missing;
}

std::string Column::CellText(std::int64_t row) const {
  if (IsMissing(row)) return std::string();
  switch (type_) {
    case ColumnType::kNumeric:
      return fmt::format("{}", numeric_[row]);
    case ColumnType::kCategorical:
    case ColumnType::kText:
      return std::string(dictionary_[codes_[row]]);
    case ColumnType::kDatetime:
      return FormatDatetime(datetimes_[row]);
    case ColumnType::kBoolean:
      return booleans_[row] ? "True" : "False";
  }
  return std::string();
}

void Column::SetStringType(ColumnType type) {
  TFG_CHECK((type_ == ColumnType::kCategorical || type_ == ColumnType::kText) &&
                (type == ColumnType::kCategorical || type == ColumnType::kText),
            "SetStringType on column '{}' of type {}", name_, ColumnTypeName(type_));
  type_ = type;
}

std::size_t Column::MemoryBytes() const {
  return numeric_.capacity() * sizeof(double) + codes_.capacity() * sizeof(std::int32_t) +
         dictionary_.MemoryBytes() + datetimes_.capacity() * sizeof(std::int64_t) +
         booleans_.capacity();
}

}  // namespace tabforge::data
