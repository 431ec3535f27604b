// Typed columns of a Table. Each column stores its cells in a few flat arrays (no per-cell
// heap allocation): numbers as float64 with NaN for missing, categorical and text cells as
// int32 codes into a string dictionary, datetimes as int64 seconds, booleans as int8.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace tabforge::data {

// The logical type of a column, as inferred by the reader or set by the caller.
enum class ColumnType : std::uint8_t {
  kNumeric,      // float64; missing is NaN
  kCategorical,  // dictionary codes; missing is kMissingCode
  kText,      // free text (long, mostly unique, many words); dictionary-encoded like kCategorical
  kDatetime,  // int64 seconds since 1970-01-01T00:00:00Z; missing is kMissingDatetime
  kBoolean,   // int8 0/1; missing is kMissingBool
};

// Lower-case name of a type: "numeric", "categorical", "text", "datetime", "boolean".
std::string_view ColumnTypeName(ColumnType type);

inline constexpr std::int32_t kMissingCode = -1;
inline constexpr std::int64_t kMissingDatetime = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int8_t kMissingBool = -1;

// A set of distinct strings stored back to back in one buffer, each with a dense id in order
// of insertion. Lookup is by open addressing on a 64-bit hash. Ids are int32.
class StringDictionary {
 public:
  StringDictionary() = default;

  // The id of `value`, inserting it (with the next id) when absent.
  std::int32_t Insert(std::string_view value);
  // The id of `value`, or kMissingCode when absent.
  std::int32_t Find(std::string_view value) const;
  // The string with id `id`; valid until the next Insert. Precondition: 0 <= id < size().
  std::string_view operator[](std::int32_t id) const {
    return std::string_view(bytes_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  std::int32_t size() const { return static_cast<std::int32_t>(offsets_.size()) - 1; }
  // Bytes held by the buffer, offsets and hash index.
  std::size_t MemoryBytes() const;

 private:
  void Grow();

  std::string bytes_;                      // all strings, concatenated
  std::vector<std::uint64_t> offsets_{0};  // size()+1 offsets into bytes_
  std::vector<std::int32_t> slots_;        // open-addressing index: id or -1
};

// One column: a name, a type and the storage for that type. Only the vector matching type()
// is used; the others stay empty.
class Column {
 public:
  Column() = default;
  Column(std::string name, ColumnType type) : name_(std::move(name)), type_(type) {}

  const std::string& name() const { return name_; }
  ColumnType type() const { return type_; }
  std::int64_t size() const;

  // Storage, by type. numeric(): kNumeric; codes()/dictionary(): kCategorical and kText;
  // datetimes(): kDatetime; booleans(): kBoolean.
  std::vector<double>& numeric() { return numeric_; }
  const std::vector<double>& numeric() const { return numeric_; }
  std::vector<std::int32_t>& codes() { return codes_; }
  const std::vector<std::int32_t>& codes() const { return codes_; }
  StringDictionary& dictionary() { return dictionary_; }
  const StringDictionary& dictionary() const { return dictionary_; }
  std::vector<std::int64_t>& datetimes() { return datetimes_; }
  const std::vector<std::int64_t>& datetimes() const { return datetimes_; }
  std::vector<std::int8_t>& booleans() { return booleans_; }
  const std::vector<std::int8_t>& booleans() const { return booleans_; }

  // Whether the cell at `row` is missing.
  bool IsMissing(std::int64_t row) const;
  // The number of missing cells.
  std::int64_t MissingCount() const;
  // The cell as text, as it would be written to a CSV ("" when missing): numbers in the
  // shortest round-trip form, datetimes as ISO-8601, booleans as "True"/"False".
  std::string CellText(std::int64_t row) const;

  // Changes a categorical column to text or back; the storage is shared by both types.
  void SetStringType(ColumnType type);

  // Bytes held by this column's storage.
  std::size_t MemoryBytes() const;

 private:
  std::string name_;
  ColumnType type_ = ColumnType::kNumeric;
  std::vector<double> numeric_;
  std::vector<std::int32_t> codes_;
  StringDictionary dictionary_;
  std::vector<std::int64_t> datetimes_;
  std::vector<std::int8_t> booleans_;
};

}  // namespace tabforge::data
