// Internal to the feature pipeline: the fitted state of one column, shared by pipeline.cc
// (fit and transform) and pipeline_io.cc (serialization).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/column.h"
#include "features/text_features.h"

namespace tabforge::features {

// How a kept column is turned into features (see pipeline.h for each).
enum class Encoding { kNumeric, kBoolean, kCategorical, kDatetime, kText };

struct ColumnTransform {
  std::string column;
  data::ColumnType input_type = data::ColumnType::kNumeric;
  Encoding encoding = Encoding::kNumeric;
  bool missing_indicator = false;       // numeric
  std::vector<std::string> categories;  // categorical: kept categories, code order
  std::vector<std::string> rare;        // categorical: seen at fit, folded into RareCode()
  data::StringDictionary lookup;        // categorical: categories, then rare ones
  bool has_time = false;                // datetime
  bool special = false;                 // text
  bool ngrams = false;                  // text
  NgramVectorizer vectorizer;           // text

  // Codes after the kept categories.
  std::int32_t RareCode() const { return static_cast<std::int32_t>(categories.size()); }
  std::int32_t UnknownCode() const { return RareCode() + 1; }
  std::int32_t MissingCode() const { return RareCode() + 2; }
  std::int32_t Cardinality() const { return RareCode() + 3; }
  void BuildLookup() {
    lookup = data::StringDictionary();
    for (const std::string& category : categories) lookup.Insert(category);
    for (const std::string& category : rare) lookup.Insert(category);
  }
  // The output code of a present value.
  std::int32_t CodeOf(std::string_view value) const {
    std::int32_t id = lookup.Find(value);
    if (id == data::kMissingCode) return UnknownCode();
    return id < RareCode() ? id : RareCode();
  }
};

// 64-bit FNV-1a of `bytes`.
inline std::uint64_t Fnv1a(std::string_view bytes) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  return hash;
}

}  // namespace tabforge::features
