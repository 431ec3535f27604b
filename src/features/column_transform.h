// Internal to the feature pipeline: the fitted state of one column, shared by pipeline.cc
// (fit and transform) and pipeline_io.cc (serialization).
#pragma once

#include <algorithm>
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
  bool missing_indicator = false;         // numeric
  std::vector<std::string> categories;    // categorical: kept categories, code order
  std::vector<std::string> rare;          // categorical: seen at fit, folded into RareCode()
  data::StringDictionary lookup;          // categorical: categories, then rare ones
  std::vector<std::int32_t> sorted_rank;  // categorical: FeatureInfo::sorted_rank of the codes
  bool has_time = false;                  // datetime
  bool special = false;                   // text
  bool ngrams = false;                    // text
  NgramVectorizer vectorizer;             // text

  // Codes after the kept categories.
  std::int32_t RareCode() const { return static_cast<std::int32_t>(categories.size()); }
  std::int32_t UnknownCode() const { return RareCode() + 1; }
  std::int32_t MissingCode() const { return RareCode() + 2; }
  std::int32_t Cardinality() const { return RareCode() + 3; }
  // Builds `lookup` and `sorted_rank` from the categories (after fitting or loading them).
  void BuildLookup() {
    lookup = data::StringDictionary();
    for (const std::string& category : categories) lookup.Insert(category);
    for (const std::string& category : rare) lookup.Insert(category);
    std::vector<std::int32_t> kept(categories.size());
    for (std::size_t code = 0; code < kept.size(); ++code) {
      kept[code] = static_cast<std::int32_t>(code);
    }
    std::sort(kept.begin(), kept.end(),
              [&](std::int32_t a, std::int32_t b) { return categories[a] < categories[b]; });
    sorted_rank.assign(static_cast<std::size_t>(Cardinality()), 0);
    for (std::size_t rank = 0; rank < kept.size(); ++rank) {
      sorted_rank[kept[rank]] = static_cast<std::int32_t>(rank);
    }
    for (std::int32_t code = RareCode(); code < Cardinality(); ++code) sorted_rank[code] = code;
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
